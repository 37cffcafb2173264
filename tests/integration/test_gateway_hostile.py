"""The gateway under bad input: traversal, writes, unknown names, a branch moving while it
serves, clients that hang up mid-chunk, and no catalog URL or credential in any answer or log
line."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
from tests.conftest import PG_URL, _need_postgres, unique
from tests.integration._gateway import Answer, gateway, request
from zarrlake.gateway import Lake, Served


@pytest.fixture
def lake(tmp_path: Path) -> zarrlake.Repo:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    s = repo.writable_session()
    g = zarr.open_group(s.store, mode="w")
    a = g.create_array("a", shape=(8,), chunks=(4,), dtype="i4")
    a[:] = np.arange(8)
    s.commit("one")
    return repo


@pytest.fixture
def served(lake: zarrlake.Repo) -> Iterator[Served]:
    with gateway(Lake.for_repo(lake)) as s:
        yield s


def short_text(got: Answer) -> str:
    assert got.header("Content-Type") == "text/plain; charset=utf-8"
    assert len(got.body) < 200
    return got.body.decode()


@pytest.mark.parametrize(
    "path",
    [
        "/default/main/../../catalog.db",
        "/default/main/a/../../../etc/passwd",
        "/default/main/%2e%2e/%2e%2e/catalog.db",
        "/default/main/a%2f..%2f..%2fcatalog.db",
        "/default/main/a%2Fc%2F0",
        "/default%2fmain/a/zarr.json",
        "/default/main//etc/passwd",
        "//etc/passwd",
        "/default/..%2F..%2Fetc/zarr.json",
        "/default/main/a\\..\\zarr.json",
        "/default/main/a/%00/zarr.json",
        "/default/main/%ff%fe/zarr.json",
        "http://127.0.0.1/default/main/a/zarr.json",
    ],
)
def test_traversal_is_refused(served: Served, path: str) -> None:
    got = request(served, path)
    assert got.status == 400, path
    assert short_text(got).startswith("bad")


def test_an_over_long_path_is_refused(served: Served) -> None:
    got = request(served, "/default/main/" + "a/" * 600 + "zarr.json")
    assert got.status == 414
    short_text(got)


@pytest.mark.parametrize("method", ["PUT", "POST", "DELETE", "PATCH", "PROPFIND"])
def test_writes_are_refused(served: Served, lake: zarrlake.Repo, method: str) -> None:
    head = lake.resolve("main")
    got = request(served, "/default/main/a/c/0", method=method, body=b"\x00" * 16)
    assert got.status == 405
    assert got.header("Allow") == "GET, HEAD, OPTIONS"
    assert "read-only" in short_text(got) or "not allowed" in got.body.decode()
    assert lake.resolve("main") == head
    assert request(served, "/default/main/a/c/0").status == 200


def test_a_large_upload_is_not_buffered(served: Served) -> None:
    try:
        got = request(served, "/default/main/a/c/0", method="PUT", body=b"\x00" * (1 << 20))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server hung up rather than read a body it would refuse
    else:
        assert got.status in (400, 405, 413)
    assert request(served, "/default/main/a/c/0").status == 200


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/nope/main/zarr.json", "no repo 'nope'"),
        ("/default/nope/zarr.json", "no ref 'nope'"),
        ("/default/main~9/zarr.json", "no ref 'main~9'"),
        ("/default/main/b/zarr.json", "no key 'b/zarr.json'"),
        ("/default/main/a/c/7", "no key 'a/c/7'"),
    ],
)
def test_unknown_things_are_404_with_short_text(served: Served, path: str, says: str) -> None:
    got = request(served, path)
    assert got.status == 404
    assert says in short_text(got)


def test_a_token_is_required_when_set(lake: zarrlake.Repo) -> None:
    token = "t0ken-for-tests"
    with gateway(Lake.for_repo(lake), token=token) as s:
        refused = request(s, "/default/main/zarr.json")
        assert refused.status == 401
        assert refused.header("WWW-Authenticate") == 'Bearer realm="zarrlake"'
        ok = request(s, "/default/main/zarr.json", headers={"Authorization": f"Bearer {token}"})
        assert ok.status == 200
        assert request(s, f"/default/main/zarr.json?token={token}").status == 200
        assert request(s, "/default/main/zarr.json?token=wrong-token").status == 401
        g = zarr.open_group(
            f"{s.url}default/main",
            mode="r",
            storage_options={"headers": {"Authorization": f"Bearer {token}"}},
        )
        assert g["a"][:].tolist() == list(range(8))


def test_cors(lake: zarrlake.Repo) -> None:
    with gateway(Lake.for_repo(lake), cors=["http://viewer.test"]) as s:
        ok = request(s, "/default/main/zarr.json", headers={"Origin": "http://viewer.test"})
        assert ok.header("Access-Control-Allow-Origin") == "http://viewer.test"
        assert "X-Zarrlake-Commit" in (ok.header("Access-Control-Expose-Headers") or "")
        other = request(s, "/default/main/zarr.json", headers={"Origin": "http://evil.test"})
        assert other.header("Access-Control-Allow-Origin") is None
        pre = request(
            s,
            "/default/main/a/c/0",
            method="OPTIONS",
            headers={"Origin": "http://viewer.test", "Access-Control-Request-Method": "GET"},
        )
        assert pre.status == 204
        assert "Range" in (pre.header("Access-Control-Allow-Headers") or "")
    with gateway(Lake.for_repo(lake)) as s:  # no CORS unless asked for
        got = request(s, "/default/main/zarr.json", headers={"Origin": "http://viewer.test"})
        assert got.header("Access-Control-Allow-Origin") is None


# -- a branch that moves while the gateway serves it ---------------------------------------------


def test_each_answer_is_one_version_while_the_branch_moves(tmp_path: Path) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    s = repo.writable_session()
    g = zarr.open_group(s.store, mode="w")
    for name in ("p", "q", "r"):
        g.create_array(name, shape=(4,), chunks=(4,), dtype="i4", fill_value=0)
    s.commit("empty")
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set() and i < 200:
            i += 1
            w = repo.writable_session()
            root = zarr.open_group(w.store, mode="r+")
            root.attrs["version"] = i
            for name in ("p", "q", "r"):
                root[name].attrs["version"] = i
                root[name][:] = i
            w.commit(f"version {i}")

    t = threading.Thread(target=writer)
    t.start()
    seen: set[str] = set()
    try:
        with gateway(Lake.for_repo(repo)) as served:
            deadline = time.monotonic() + 20
            while len(seen) < 5 and time.monotonic() < deadline:
                doc = request(served, "/default/main/zarr.json")
                commit = doc.header("X-Zarrlake-Commit")
                assert commit is not None
                seen.add(commit)
                meta = zarr.open_group(repo.readonly_session(commit=commit).store, mode="r")
                body = json.loads(doc.body)
                versions = {body["attributes"].get("version")} | {
                    m["attributes"].get("version")
                    for m in body["consolidated_metadata"]["metadata"].values()
                }
                assert versions == {meta.attrs.get("version")}  # one version, never a mix
                chunk = request(served, "/default/main/q/c/0")
                at = chunk.header("X-Zarrlake-Commit")
                expected = repo.readonly_session(commit=at).store.get_sync("q/c/0")
                if expected is None:  # not written yet at that commit
                    assert chunk.status == 404
                else:
                    assert chunk.body == expected.to_bytes()
    finally:
        stop.set()
        t.join(60)
    assert len(seen) >= 2  # the branch did move under the reader


# -- a client that hangs up mid-chunk ------------------------------------------------------------


def test_a_client_that_disconnects_mid_chunk(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    s = repo.writable_session()
    big = zarr.open_group(s.store, mode="w").create_array(
        "big", shape=(2048, 2048), chunks=(2048, 2048), dtype="f4", compressors=None
    )
    big[:] = 1.5  # one 16 MiB chunk
    s.commit("big")
    caplog.set_level(logging.DEBUG)
    with gateway(Lake.for_repo(repo)) as served:
        for _ in range(5):
            sock = socket.create_connection(("127.0.0.1", served.port))
            sock.sendall(b"GET /default/main/big/c/0/0 HTTP/1.1\r\nHost: x\r\n\r\n")
            assert len(sock.recv(65536)) > 0
            sock.close()
        time.sleep(0.5)
        got = request(served, "/default/main/big/c/0/0")
        assert got.status == 200
        assert len(got.body) == 2048 * 2048 * 4
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    assert "Traceback" not in caplog.text


# -- secrets -------------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.s3
def test_no_catalog_url_or_credential_in_answers_or_logs(
    s3_endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    _need_postgres()
    password, secret = "pg-pass-9d1e", "s3-secret-7f3a"
    catalog = PG_URL.replace("postgres@", f"postgres:{password}@")  # trust auth ignores it
    options = {
        "endpoint_url": s3_endpoint,
        "key": "gw-key-4411",
        "secret": secret,
        "client_kwargs": {"region_name": "us-east-1"},
        "skip_instance_cache": True,
    }
    name = unique("gw")
    repo = zarrlake.Repo.create(
        catalog=catalog, storage=f"s3://lake/{name}", name=name, storage_options=options
    )
    s = repo.writable_session()
    a = zarr.open_group(s.store, mode="w").create_array(
        "a", shape=(4096,), chunks=(1024,), dtype="f8"
    )
    a[:] = np.random.default_rng(0).random(4096)  # chunks too large to be kept inline
    s.commit("one")
    import boto3

    objects = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1").list_objects_v2(
        Bucket="lake", Prefix=name
    )
    for o in objects.get("Contents", []):  # make a read fail: the error must not leak either
        boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1").delete_object(
            Bucket="lake", Key=o["Key"]
        )
    caplog.set_level(logging.DEBUG)
    url = zarrlake.parse_url(f"zarrlake+{catalog.replace('+psycopg', '')}")
    answers = []
    with gateway(Lake.for_url(url, options), token="a-token-123") as served:
        auth = {"Authorization": "Bearer a-token-123"}
        for path, method in [
            (f"/{name}/main/zarr.json", "GET"),
            (f"/{name}/main/a/c/0", "GET"),
            (f"/{name}/main/a/c/0?token=a-token-123", "GET"),
            (f"/{name}/main/", "GET"),
            (f"/{name}/", "GET"),
            ("/no-such-repo/main/zarr.json", "GET"),
            (f"/{name}/nope/zarr.json", "GET"),
            (f"/{name}/main/%2e%2e/x", "GET"),
            (f"/{name}/main/a/c/0", "PUT"),
        ]:
            answers.append(request(served, path, method=method, headers=auth))
        answers.append(request(served, f"/{name}/main/zarr.json"))  # no token
    assert answers[1].status == 500  # the chunk is gone: a short answer, details in the log
    assert "see the server log" in answers[1].body.decode()
    shown = [a.body.decode(errors="replace") + repr(a.headers) for a in answers]
    # every line the gateway (and tornado under it) logged
    logged = [r.getMessage() for r in caplog.records if r.name.startswith(("zarrlake", "tornado"))]
    for text in shown + logged:
        for leak in (password, secret, "gw-key-4411", catalog, "a-token-123", "127.0.0.1:5432"):
            assert leak not in text, (leak, text)
