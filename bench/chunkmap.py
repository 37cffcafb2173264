"""How long the dashboard's compare view takes to show the chunk map of a 10^6-chunk array.

Run by hand (not part of the test suite)::

    .venv/bin/python bench/chunkmap.py [--changed N] [--keep DIR]

Builds a repo with one 1000 x 1000 array of 1 x 1 chunks (10^6 chunks; the writes are sparse:
rows of chunks), commits ``N`` changed chunks on top, then times each step of what the
compare page does for that pair: ``repo.diff``, the chunk map (aggregated to 400 x 400
cells), the HoloViews element, the Bokeh model the browser receives, and the whole
``CompareView`` (diff + map + values A, B, A-B of the slice shown).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import zarr

import zarrlake

SIDE = 1000  # 1000 x 1000 chunks of 1 x 1


def timed(what: str, fn: Callable[[], Any], repeat: int = 3) -> Any:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    print(f"  {what:<44} median {statistics.median(times) * 1000:9.1f} ms  (of {repeat})")
    return out


def build(path: Path, changed_rows: int) -> tuple[zarrlake.Repo, str, str]:
    repo = zarrlake.Repo.create(path)
    s = repo.writable_session()
    arr = zarr.open_group(s.store, mode="w").create_array(
        "grid",
        shape=(SIDE, SIDE),
        chunks=(1, 1),
        dtype="i1",
        fill_value=0,
        dimension_names=("y", "x"),
    )
    arr[0:2, :] = 1  # a few written chunks; the rest stay at the fill value
    a = s.commit("create a 10^6-chunk array")
    s = repo.writable_session()
    rows = np.linspace(10, SIDE - 10, changed_rows).astype(int)
    arr = zarr.open_array(s.store, path="grid")
    for r in rows:
        arr[r, :] = 2  # chunks never written before: added
    arr[0, : SIDE // 2] = 3  # chunks written in the first commit: changed
    b = s.commit(f"change {changed_rows * SIDE} chunks")
    return repo, a, b


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--changed-rows", type=int, default=10, help="rows of 1000 chunks changed")
    p.add_argument("--keep", type=Path, help="build the repo here and keep it")
    args = p.parse_args()

    import holoviews as hv

    from zarrlake.ui.dashboard.chunkmap import chunk_map
    from zarrlake.ui.dashboard.chunkplot import chunkmap_plot
    from zarrlake.ui.dashboard.compare import CompareView
    from zarrlake.ui.dashboard.context import Context

    hv.extension("bokeh")
    root = args.keep or Path(tempfile.mkdtemp(prefix="zl-chunkmap-"))
    try:
        t = time.perf_counter()
        repo, a, b = build(root / "lake", args.changed_rows)
        print(
            f"built a {SIDE}x{SIDE}-chunk array and a commit writing "
            f"{args.changed_rows * SIDE + SIDE // 2} chunks, in {time.perf_counter() - t:.1f} s"
        )
        ctx = Context(repo)
        d = timed("repo.diff(a, b)", lambda: repo.diff(a, b))
        node = d["grid"]
        print(f"  (diff: {len(node.chunks_changed)} changed, {len(node.chunks_added)} added)")
        info = ctx.reader.info(b, "grid")
        m = timed("chunk_map (10^6 cells -> 400x400 blocks)", lambda: chunk_map(node, info.grid))
        el = timed("HoloViews element", lambda: chunkmap_plot(m, info))
        timed("Bokeh model (what the page sends)", lambda: hv.render(el, backend="bokeh"))
        timed(
            "CompareView: diff + map + values, end to end",
            lambda: CompareView(ctx, a=a, b=b, array="grid"),
        )
        print(f"  cells drawn: {m.cells.shape[0]}x{m.cells.shape[1]}, block {m.block}")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
