"""Run one page's blocks in order, in this interpreter: ``python _run_page.py BLOCKS.json``.

Python blocks share one namespace; shell blocks run in bash (``-e -o pipefail``) in the same
working directory. The first failure stops the page, naming the page and line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import traceback


def main(spec_path: str) -> int:
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in spec:
        where = f"{block['page']}:{block['line']}"
        print(f"--- {where} ({block['kind']})", flush=True)
        if block["kind"] == "shell":
            done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block["code"]])
            if done.returncode:
                print(f"FAILED {where}: shell block exited {done.returncode}", flush=True)
                return 1
            continue
        try:
            exec(compile(block["code"], where, "exec"), namespace)
        except BaseException:
            traceback.print_exc()
            print(f"FAILED {where}", flush=True)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
