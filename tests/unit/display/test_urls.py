"""``safe_url``, the one redaction of catalog and storage URLs: every form a credential takes
in a URL, and every output that shows one (reprs, the dashboard's overview)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrlake
from tests.conftest import unique
from zarrlake import display
from zarrlake.types import redact_urls, safe_url, url_secrets
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.overview import OverviewView

FORMS = [
    # user:password@, as SQLAlchemy writes it
    ("postgresql+psycopg://alice:hunter2@db.example:5432/lake", "postgresql+psycopg://alice:***@db.example:5432/lake"),
    # a password in the query, alone and among other parameters
    ("postgresql+psycopg://alice@h/db?password=hunter2", "postgresql+psycopg://alice@h/db?password=***"),
    ("postgresql://h/db?sslmode=require&password=hunter2&application_name=x", "postgresql://h/db?sslmode=require&password=***&application_name=x"),
    ("postgresql://h/db?sslpassword=hunter2&sslkey=/k.pem#f", "postgresql://h/db?sslpassword=***&sslkey=***#f"),
    # URLs SQLAlchemy cannot parse, or parses into the wrong password
    ("postgresql://alice:hunter2@h:notaport/db", "postgresql://alice:***@h:notaport/db"),
    ("postgresql://alice:hun@ter2@h/db", "postgresql://alice:***@h/db"),
    ("postgresql://alice:hun/ter?2#x@h/db", "postgresql://alice:***@h/db"),
    ("postgresql+psycopg:/alice:hunter2@h/db", "postgresql+psycopg:/alice:***@h/db"),
    # storage URLs with credentials
    ("s3://AKIDEXAMPLE:hunter2@bucket/prefix", "s3://AKIDEXAMPLE:***@bucket/prefix"),
    ("s3://bucket/prefix?token=hunter2", "s3://bucket/prefix?token=***"),
    ("https://hunter2@example.org/lake", "https://***@example.org/lake"),
    ("https://h/o?X-Amz-Credential=AKID%2F1&X-Amz-Signature=hunter2", "https://h/o?X-Amz-Credential=***&X-Amz-Signature=***"),
    ("abfs://container@account.dfs.core.windows.net/p?sv=2021&sig=hunter2", "abfs://container@account.dfs.core.windows.net/p?sv=2021&sig=***"),
    # not URLs: a libpq connection string, paths
    ("host=h user=alice password=hunter2 dbname=lake", "host=h user=alice password=*** dbname=lake"),
    # nothing to mask
    ("sqlite:////tmp/lake/catalog.db", "sqlite:////tmp/lake/catalog.db"),
    ("postgresql+psycopg://alice@h:5432/db?sslmode=require", "postgresql+psycopg://alice@h:5432/db?sslmode=require"),
    ("s3://bucket/with@sign/prefix", "s3://bucket/with@sign/prefix"),
    ("/data/lake/chunks", "/data/lake/chunks"),
    ("not a url at all", "not a url at all"),
]  # fmt: skip


@pytest.mark.parametrize(("url", "shown"), FORMS)
def test_every_form_of_credential_is_masked(url: str, shown: str) -> None:
    assert safe_url(url) == shown


def test_the_secrets_are_what_is_masked() -> None:
    assert url_secrets("postgresql://a:pw1@h/db?password=pw2&x=1") == ["pw1", "pw2"]
    assert url_secrets("https://tok@h/x") == ["tok"]
    assert url_secrets("s3://bucket/p") == []


def test_urls_inside_a_message_are_masked() -> None:
    text = (
        "cannot use catalog URL 'postgresql://alice:hunter2@h/db?password=hunter3': refused; "
        "storage s3://KEY:hunter4@b/p unreachable"
    )
    out = redact_urls(text)
    assert "hunter" not in out
    assert out == (
        "cannot use catalog URL 'postgresql://alice:***@h/db?password=***': refused; "
        "storage s3://KEY:***@b/p unreachable"
    )


PASSWORD = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@/?#:;!%&=+ ", min_size=6)


@settings(max_examples=300, deadline=None)
@given(password=PASSWORD.filter(lambda p: p.strip() == p))
def test_a_password_never_shows_whatever_it_holds(password: str) -> None:
    for url in (
        f"postgresql+psycopg://user:{password}@db.example/lake",
        f"s3://KEYID:{password}@bucket/prefix",
    ):
        assert password not in safe_url(url), url
        assert password not in redact_urls(f"cannot reach {url!r}: refused"), url


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_never_raises(text: str) -> None:
    assert isinstance(safe_url(text), str)
    assert isinstance(redact_urls(text), str)


def test_reprs_and_the_dashboard_mask_a_storage_token(
    make_repo: Callable[..., zarrlake.Repo], s3_options: dict[str, object]
) -> None:
    name = unique("tok")
    repo = make_repo(
        name=name, storage=f"s3://lake/{name}?token=hunter2", storage_options=s3_options
    )
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(4,), chunks=(2,), dtype="i1")[:] = 1
    s.commit("one")
    assert repo.storage.endswith("?token=hunter2")  # as the catalog records it
    header = OverviewView(Context(repo)).header.object
    for shown in (display.repo_html(repo), display.repo_text(repo), header):
        assert "hunter2" not in shown
        assert f"s3://lake/{name}?token=***" in shown
