"""Build tests/data/lake_flat_index.tar.gz: a small embedded lake whose manifest indexes are in
the flat JSON format of schema 3 before the index tree (commit 5431f05).

Run against that code, e.g. from a worktree of it:
    PYTHONPATH=<worktree>/src python tests/data/make_flat_index_lake.py /tmp/lake
    tar czf tests/data/lake_flat_index.tar.gz -C /tmp lake
"""

import shutil
import sqlite3
import sys
from pathlib import Path

import numpy as np
import zarr

import zarrlake
import zarrlake.model.manifest as m

assert hasattr(m, "ManifestIndex"), "must run against the old code"
out = Path(sys.argv[1])
shutil.rmtree(out, ignore_errors=True)
repo = zarrlake.Repo.create(out)
s = repo.writable_session()
g = zarr.open_group(s.store)
a = g.create_array("temp", shape=(40, 1024), chunks=(1, 16), dtype="i1", compressors=None)
a[:] = (np.arange(40 * 1024) % 120).astype("i1").reshape(40, 1024)
c = g.create_array("big", shape=(4, 1024), chunks=(1, 1024), dtype="f8")
c[:] = np.arange(4 * 1024, dtype="f8").reshape(4, 1024)
b = g.create_array("small", shape=(10,), chunks=(5,), dtype="i2")
b[:] = np.arange(10)
s.commit("initial")
repo.create_tag("v1", "main")
repo.create_branch("exp", "main")
s = repo.writable_session("exp")
zarr.open_array(s.store, path="temp")[0:8, 0:64] = -1
zarr.open_array(s.store, path="big")[1] = 0.5
s.commit("experiment")
s = repo.writable_session()
zarr.open_array(s.store, path="temp")[36:40, 1000:1024] = 7
s.commit("edit the corner")
con = sqlite3.connect(out / "catalog.db")
con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
con.close()
print(repo.log()[0].id, [c.id for c in repo.log()])
