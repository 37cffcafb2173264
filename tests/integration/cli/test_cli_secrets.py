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
TOKEN = "tOkEn-VALUE-4q"


def _clean(*procs: subprocess.CompletedProcess[str]) -> None:
    for p in procs:
        for value in (PASSWORD, SECRET, KEY_ID, TOKEN):
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


@pytest.mark.postgres
def test_a_password_in_the_query_is_never_printed(tmp_path: Path) -> None:
    _need_postgres()
    url_text = make_url(PG_URL).update_query_dict({"password": PASSWORD}).render_as_string()
    assert url_text.endswith(f"?password={PASSWORD}")
    shown = url_text.replace(PASSWORD, "***")
    name = unique("qsecret")
    loc = ["--catalog", url_text, "--name", name]
    init = run("init", *loc, "--storage", str(tmp_path / "objects"), "--json")
    assert init.returncode == 0, init.stderr
    assert json.loads(init.stdout)["catalog"] == shown
    other = ["--catalog", url_text, "--name", unique("qsecret")]
    init_text = run("init", *other, "--storage", str(tmp_path / "objects2"))
    assert init_text.returncode == 0, init_text.stderr
    assert f" in catalog {shown}, chunks at " in init_text.stdout
    listed = run("log", *loc, "--json")
    assert listed.returncode == 0
    missing = run("show", *loc, "nope", "--json")
    assert missing.returncode == 1
    unreachable = run(
        "log",
        "--catalog",
        f"postgresql+psycopg://postgres@127.0.0.1:1/test?password={PASSWORD}",
        "--name",
        "x",
    )
    assert unreachable.returncode == 4
    _clean(init, init_text, listed, missing, unreachable)


def test_a_token_in_the_storage_url_is_never_printed(catalog_url: str, s3_endpoint: str) -> None:
    opts = [
        "-o", f"endpoint_url={s3_endpoint}",
        "-o", "key=testing",
        "-o", "secret=testing",
        "-o", "client_kwargs.region_name=us-east-1",
    ]  # fmt: skip
    name = unique("s3tok")
    storage = f"s3://lake/{name}?token={TOKEN}"
    init = run(
        "init", "--catalog", catalog_url, "--name", name, "--storage", storage, *opts, "--json"
    )
    assert init.returncode == 0, init.stderr
    assert json.loads(init.stdout)["storage"] == f"s3://lake/{name}?token=***"
    other = unique("s3tok")
    init_text = run(
        "init",
        "--catalog",
        catalog_url,
        "--name",
        other,
        "--storage",
        f"s3://lake/{other}?token={TOKEN}",
        *opts,
    )
    assert init_text.returncode == 0, init_text.stderr
    assert f"chunks at s3://lake/{other}?token=***\n" in init_text.stdout
    _clean(init, init_text)


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
