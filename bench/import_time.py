"""How long ``import zarrlake`` takes next to ``import zarr`` (and Icechunk), each in a fresh
interpreter, interleaved so that load on the machine falls on every case alike.

Run by hand (not part of the test suite)::

    .venv-bench/bin/python bench/import_time.py [--repeat 15]

Cases: ``import zarr``; ``import zarrlake`` (what the target of 1.5x ``import zarr`` is about);
``import zarrlake`` and then ``zarrlake.Repo`` (which loads the catalog's SQLAlchemy, the first
time a repository is used); ``import zarrlake`` with xarray (the accessor) and
``import icechunk``; and ``zarrlake --help`` (the command line's own modules and its help,
which need neither zarr nor the catalog). Printed: the median and the best time per case, and
each case's ratio to ``import zarr``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys

CASES = {
    "import zarr": "import zarr",
    "import zarrlake": "import zarrlake",
    "import zarrlake; zarrlake.Repo": "import zarrlake; zarrlake.Repo",
    "import xarray, zarrlake": "import xarray, zarrlake",
    "import icechunk": "import icechunk",
    "zarrlake --help": (
        "import contextlib, io\n"
        "from zarrlake.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])"
    ),
}


def _time(code: str) -> float:
    probe = f"import time\nt = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    cases = dict(CASES)
    if importlib.util.find_spec("icechunk") is None:
        del cases["import icechunk"]
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, code in cases.items():
            samples[name].append(_time(code))
    base = statistics.median(samples["import zarr"])
    print(f"{'case':34} {'median':>9} {'best':>9} {'/ zarr':>7}")
    for name, values in samples.items():
        med = statistics.median(values)
        print(f"{name:34} {med * 1e3:7.0f}ms {min(values) * 1e3:7.0f}ms {med / base:6.2f}x")


if __name__ == "__main__":
    main()
