"""Credentials given to the command (a catalog URL's password, storage option secrets) never
appear in its output, on success or on failure."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import zarr
from sqlalchemy.engine import make_url

import zarrlake
from tests.conftest import PG_URL, _need_postgres, unique
from tests.integration.cli.conftest import run

PASSWORD = "pw-Zq7-SECRET"
SECRET = "sEcReT-VALUE-9x"
KEY_ID = "AKIDSECRETKEY1"


def _clean(*procs: subprocess.CompletedProcess[str]) -> None:
    for p in procs:
        for value in (PASSWORD, SECRET, KEY_ID):
            assert value not in p.stdout, (p.args, value)
            assert value not in p.stderr, (p.args, value)


@pytest.mark.postgres
def test_a_catalog_password_is_never_printed(tmp_path: Path) -> None:
    _need_postgres()
    # The test server trusts local connections, so the password is accepted and ignored.
    url = make_url(PG_URL).set(password=PASSWORD).render_as_string(hide_password=False)
    name = unique("secret")
    loc = ["--catalog", url, "--name", name]
    init = run("init", *loc, "--storage", str(tmp_path / "objects"), "--json")
    assert init.returncode == 0, init.stderr
    assert json.loads(init.stdout)["catalog"] == url.replace(PASSWORD, "***")
    listed = run("log", *loc, "--json")
    assert listed.returncode == 0
    missing = run("show", *loc, "nope")
    assert missing.returncode == 1
    missing_json = run("show", *loc, "nope", "--json")
    unreachable = run(
        "log",
        "--catalog",
        f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:1/test",
        "--name",
        "x",
    )
    assert unreachable.returncode == 4
    _clean(init, listed, missing, missing_json, unreachable)


def test_storage_option_secrets_are_never_printed(
    catalog_url: str, s3_endpoint: str, tmp_path: Path
) -> None:
    name = unique("s3cli")
    loc = ["--catalog", catalog_url, "--name", name]
    opts = [
        "-o", f"endpoint_url={s3_endpoint}",
        "-o", f"key={KEY_ID}",
        "-o", f"secret={SECRET}",
        "-o", "client_kwargs.region_name=us-east-1",
        "-o", "skip_instance_cache=true",
    ]  # fmt: skip
    init = run("init", *loc, "--storage", f"s3://lake/{name}", *opts, "--json")
    assert init.returncode == 0, init.stderr
    repo = zarrlake.Repo.open(
        catalog=catalog_url,
        name=name,
        storage_options={
            "endpoint_url": s3_endpoint,
            "key": KEY_ID,
            "secret": SECRET,
            "client_kwargs": {"region_name": "us-east-1"},
            "skip_instance_cache": True,
        },
    )
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("x", shape=(4096,), chunks=(1024,), dtype="f8")[
        :
    ] = np.random.default_rng(0).random(4096)
    s.commit("on s3")
    fsck = run("fsck", *loc, *opts, "--verify", "--json")
    assert fsck.returncode == 0, fsck.stderr
    assert json.loads(fsck.stdout)["objects_checked"] >= 1
    export = run("export", *loc, *opts, "main", str(tmp_path / "copy"))
    assert export.returncode == 0, export.stderr
    bad = run("diff", *loc, *opts, "main", "nope", "--json")
    assert bad.returncode == 1
    sessions = run("sessions", *loc, *opts, "--all")
    _clean(init, fsck, export, bad, sessions)
