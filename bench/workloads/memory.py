"""Workload 7: peak memory of a full read of an uncompressed array in 16 KiB chunks (workload
1's) and in 1 MiB chunks.

The read runs in a fresh Python process per system. The child imports everything and opens
the array first, notes its RSS and resets its peak (``VmHWM``), reads the whole array into one
NumPy array, and notes the peak. Reported: the increase of the peak during the read as a
multiple of the data size (the result array alone is 1.0x), and the child's total peak for
reference. Uses workload 1's data when it ran in the same invocation, else writes its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # child process: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.common import (
    MiB,
    Result,
    Settings,
    clock,
    create_handle,
    field_data,
    open_spec,
    systems_for,
    upper_target,
)

NAME = "memory"
TITLE = "7. peak RSS of a full read (uncompressed)"
LIMIT = 1.2
CHUNK_BYTES = (16 * 1024, MiB)


def _status(field: str) -> int:
    """A memory figure of this process from /proc/self/status, in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def child(spec_json: str) -> None:
    import zarr

    spec = json.loads(spec_json)
    handle = open_spec(spec["spec"])
    arr = zarr.open_array(handle.readonly_store(spec["version"]), path="a", mode="r")
    # Not getrusage's ru_maxrss: Linux keeps in it the peak of the process before exec (the
    # forked copy of the parent, which holds the benchmark's data), so it hides the read.
    # VmHWM belongs to this process image; writing 5 to clear_refs resets it to the current
    # RSS, so the peak after the read is the peak of the read.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status("VmRSS")
    t0 = clock()
    data = arr[:]
    elapsed = clock() - t0
    after = _status("VmHWM")
    print(
        json.dumps(
            {"before": before, "after": after, "seconds": elapsed, "nbytes": int(data.nbytes)}
        )
    )


def write_own(settings: Settings, system: str, chunk_bytes: int) -> dict[str, Any]:
    import zarr

    from bench.workloads.write_read import size_bytes

    data = field_data(size_bytes(settings) // 4)
    handle = create_handle(settings, system, f"w7-{chunk_bytes}")
    txn = handle.writable()
    arr = zarr.create_array(
        txn.store,
        name="a",
        shape=data.shape,
        chunks=(chunk_bytes // 4,),
        dtype="f4",
        compressors=None,
    )
    arr[:] = data
    version = txn.commit("write")
    return {
        "spec": handle.spec(),
        "version": version,
        "nbytes": data.nbytes,
        "path": str(handle.path),
    }


def run(settings: Settings) -> list[Result]:
    stored: dict[str, dict[str, Any]] = settings.shared.get("w1b", {})
    results: list[Result] = []
    repeats = 1 if settings.quick else 3
    for chunk_bytes in CHUNK_BYTES:
        for system in systems_for(settings, postgres=False):
            results.append(_measure(settings, system, chunk_bytes, stored, repeats))
    return results


def _measure(
    settings: Settings, system: str, chunk_bytes: int, stored: dict[str, Any], repeats: int
) -> Result:
    own = chunk_bytes != CHUNK_BYTES[0] or system not in stored
    info = write_own(settings, system, chunk_bytes) if own else stored[system]
    try:
        ratios: list[float] = []
        totals: list[float] = []
        for _ in range(repeats):
            proc = subprocess.run(
                [sys.executable, __file__, json.dumps(info)],
                capture_output=True, text=True, check=False, env=os.environ.copy(),
            )  # fmt: skip
            if proc.returncode != 0:
                raise RuntimeError(f"memory child for {system} failed:\n{proc.stderr[-2000:]}")
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            ratios.append((out["after"] - out["before"]) / out["nbytes"])
            totals.append(out["after"] / MiB)
        size = "1 MiB" if chunk_bytes == MiB else f"{chunk_bytes // 1024} KiB"
        case = f"{info['nbytes'] // MiB} MiB in {info['nbytes'] // chunk_bytes:,} chunks of {size}"
        r = Result(
            TITLE, case, "read peak increase / data", system, ratios, unit="x",
            note=f"child peak RSS {min(totals):.0f} MiB in all",
        )  # fmt: skip
        if system.startswith("zarrlake"):
            upper_target(r, LIMIT, f"<={LIMIT:g}x data")
        return r
    finally:
        remove_path(info)


def remove_path(info: dict[str, Any]) -> None:
    import shutil

    shutil.rmtree(info["path"], ignore_errors=True)


if __name__ == "__main__":
    child(sys.argv[1])
