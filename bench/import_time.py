"""How long ``import zarrlake`` takes next to ``import zarr`` (and Icechunk), each in a fresh
interpreter, interleaved so that load on the machine falls on every case alike.

Run by hand (not part of the test suite)::

    .venv-bench/bin/python bench/import_time.py [--repeat 15]

Cases: ``import zarr``; ``import zarrlake`` (what the target of 1.5x ``import zarr`` is about);
``import zarrlake`` and then ``zarrlake.Repo`` (which loads the catalog's SQLAlchemy, the first
time a repository is used); ``import zarrlake`` with xarray (the accessor) and
``import icechunk``; ``zarrlake --help`` (the command line's own modules and its help,
which need neither zarr nor the catalog); and ``zarrlake log`` of a small lake made first
(the catalog, but not zarr). Printed: the median and the best time per case, and each case's
ratio to ``import zarr``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

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

LOG = (
    "import contextlib, io\n"
    "from zarrlake.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
    "    assert main(['log', '-C', {lake!r}, '-n', '5']) == 0\n"
    "assert 'three' in out.getvalue()"
)


def _lake(path: Path) -> str:
    """A lake of three commits, for ``zarrlake log``."""
    import zarr

    import zarrlake

    repo = zarrlake.Repo.create(path)
    for i, message in enumerate(["one", "two", "three"]):
        s = repo.writable_session()
        arr = zarr.open_array(s.store, path="a", mode="a", shape=(4,), chunks=(2,), dtype="u1")
        arr[:] = i
        s.commit(message)
    return str(path)


def _time(code: str) -> float:
    probe = f"import time\nt = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zarrlake-import-time-") as scratch:
        log = LOG.format(lake=_lake(Path(scratch) / "lake"))
        _report({**CASES, "zarrlake log": log}, args.repeat)


def _report(cases: dict[str, str], repeat: int) -> None:
    """Time every case ``repeat`` times, interleaved, and print the table."""
    if importlib.util.find_spec("icechunk") is None:
        del cases["import icechunk"]
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, code in cases.items():
            samples[name].append(_time(code))
    base = statistics.median(samples["import zarr"])
    print(f"{'case':34} {'median':>9} {'best':>9} {'/ zarr':>7}")
    for name, values in samples.items():
        med = statistics.median(values)
        print(f"{name:34} {med * 1e3:7.0f}ms {min(values) * 1e3:7.0f}ms {med / base:6.2f}x")


if __name__ == "__main__":
    main()
