"""Benchmark zarrlake against plain Zarr (LocalStore) and Icechunk (local filesystem).

    python bench/run.py [--quick] [--json out.json] [--only NAME,...] [--catalog sqlite,postgres]
    python bench/run.py --commit-latency [--quick]    # workload 10 alone

See bench/README.md for the workloads and how to read the report.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = (
    "write_read",
    "xarray",
    "small_update",
    "checkout",
    "diff",
    "contention",
    "memory",
    "s3",
    "dask",
    "commit_latency",
    "loaded_commit",
)
OPT_IN = ("commit_latency",)  # run only when asked for (--commit-latency or --only)
HISTORY = ("small_update", "checkout", "diff")  # share one long history per system
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and depths (< 2 min)")
    parser.add_argument(
        "--json", metavar="PATH", help="also write every sample and the machine info as JSON"
    )
    parser.add_argument(
        "--only", metavar="NAME,...", help=f"run only these workloads: {', '.join(WORKLOADS)}"
    )
    parser.add_argument(
        "--catalog",
        default="sqlite,postgres",
        metavar="sqlite,postgres",
        help="zarrlake catalogs to measure (default: both; PostgreSQL is skipped if unreachable)",
    )
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("ZARRLAKE_BENCH_PG", DEFAULT_PG),
        help="a PostgreSQL server to use; the run creates and drops a database of its own "
        "(default: $ZARRLAKE_BENCH_PG or %(default)s)",
    )
    parser.add_argument(
        "--commit-latency",
        action="store_true",
        help="run workload 10 alone: one-chunk commit and open+read latency, with statement "
        "counts, on the catalogs selected",
    )
    args = parser.parse_args(argv)
    if args.commit_latency:
        args.only = "commit_latency"
    default = ",".join(w for w in WORKLOADS if w not in OPT_IN)
    names = [n.strip() for n in (args.only or default).split(",") if n.strip()]
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        parser.error(
            f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}"
        )
    args.names = [n for n in WORKLOADS if n in names]
    catalogs = {c.strip() for c in args.catalog.split(",") if c.strip()}
    if not catalogs or catalogs - {"sqlite", "postgres"}:
        parser.error("--catalog takes sqlite, postgres or both")
    args.catalogs = catalogs
    return args


def bytecode_cache(scratch: Path) -> None:
    """Let this run and its worker processes share compiled bytecode (kept in scratch).

    The environment may disable .pyc files; every spawned worker would then recompile zarr,
    SQLAlchemy and friends from source, which on a 2-core machine costs seconds per process.
    """
    prefix = str(scratch / "pycache")
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


class PostgresDatabase:
    """A database of this run's own on a PostgreSQL server, dropped at the end."""

    def __init__(self, server_url: str) -> None:
        import psycopg
        import sqlalchemy as sa

        base = sa.make_url(server_url)
        self.name = f"zarrlake_bench_{uuid.uuid4().hex[:10]}"
        self._admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(self._admin, autocommit=True, connect_timeout=5) as conn:
            self.version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
            conn.execute(f'CREATE DATABASE "{self.name}"')
        self.url = base.set(database=self.name).render_as_string(hide_password=False)

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self._admin, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # a terminated run still drops its database and scratch space (the finally below)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="zarrlake-bench-"))
    bytecode_cache(scratch)
    sys.path.insert(0, str(ROOT))

    from bench import report
    from bench.common import Result, Settings
    from bench.workloads import (
        commit_latency,
        contention,
        dask_write,
        history,
        loaded_commit,
        memory,
        s3_io,
        write_read,
        xarray_io,
    )

    pg: PostgresDatabase | None = None
    pg_note = ""
    if "postgres" in args.catalogs:
        try:
            pg = PostgresDatabase(args.pg_url)
        except Exception as exc:
            pg_note = f"PostgreSQL not used ({type(exc).__name__}: {str(exc).strip()[:120]})"
    settings = Settings(
        quick=args.quick,
        scratch=scratch,
        pg_url=pg.url if pg else None,
        sqlite="sqlite" in args.catalogs,
    )
    info = report.machine_info(pg.version if pg else None)
    mode = "--quick" if args.quick else "full"
    print(f"zarrlake benchmark ({mode}); workloads: {', '.join(args.names)}")
    report.print_machine(info)
    if pg_note:
        print(pg_note)
    results: list[Result] = []
    timings: dict[str, float] = {}
    try:
        modules: dict[str, Any] = {
            "write_read": write_read,
            "xarray": xarray_io,
            "contention": contention,
            "memory": memory,
            "s3": s3_io,
            "dask": dask_write,
            "commit_latency": commit_latency,
            "loaded_commit": loaded_commit,
        }
        history_done = False
        for name in args.names:
            t0 = time.perf_counter()
            if name in HISTORY:
                if history_done:
                    continue
                history_done = True
                results.extend(history.run(settings, set(args.names) & set(HISTORY)))
                name = "+".join(n for n in args.names if n in HISTORY)
            else:
                results.extend(modules[name].run(settings))
            timings[name] = time.perf_counter() - t0
            print(f"  [{name} done in {timings[name]:.1f} s]", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if pg is not None:
            pg.drop()
    report.print_report(results)
    elapsed = time.perf_counter() - started
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print()
    print(f"total {elapsed:.0f} s; load average at end: {load}")
    print("medians of n repeats; 'min' is the best repeat, 'spread' is (max-min)/median")
    if args.json:
        out = {
            "mode": mode,
            "machine": info,
            "seconds": elapsed,
            "workload_seconds": timings,
            "postgres": pg_note or (f"database {pg.name}" if pg else "not selected"),
            "results": [r.as_dict() for r in results],
        }
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
