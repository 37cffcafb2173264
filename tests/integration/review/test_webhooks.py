"""Webhooks: a signed JSON POST per commit, merge and pull request event, retried with
backoff, never holding a commit back."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import zarrlake
from tests.integration.review._lake import with_temp, write
from zarrlake.core.webhooks import wait_for_deliveries

SECRET = "a-webhook-secret-of-some-length"
S = (slice(0, 4), slice(0, 4))


class Receiver:
    """An HTTP server on loopback that records what it is sent; it can fail the first
    ``fail`` requests, or hold every request until ``release`` is set."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.fail = 0
        self.release = threading.Event()
        self.release.set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.release.wait(30)
                outer.got.append((dict(self.headers), body))
                status = 500 if outer.fail > 0 else 200
                outer.fail -= 1
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self) -> list[dict[str, Any]]:
        out = []
        for headers, body in self.got:
            want = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            assert headers["X-Zarrlake-Signature"] == want
            out.append({"event": headers["X-Zarrlake-Event"], **json.loads(body)})
        return out


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.release.set()
    wait_for_deliveries(30)
    r.server.shutdown()


def test_a_commit_is_posted_signed_with_its_arrays(repo: zarrlake.Repo, receiver: Receiver) -> None:
    with_temp(repo)
    repo.add_webhook(receiver.url, secret=SECRET)
    done = write(repo, S, 2.0).commit("one chunk")
    assert wait_for_deliveries(30)
    [ev] = receiver.events()
    assert (ev["event"], ev["commit"], ev["branch"], ev["message"], ev["arrays"]) == (
        "commit",
        done,
        "main",
        "one chunk",
        {"temp": 1},
    )


def test_a_slow_receiver_never_holds_a_commit_back(repo: zarrlake.Repo, receiver: Receiver) -> None:
    with_temp(repo)
    repo.add_webhook(receiver.url, secret=SECRET)
    receiver.release.clear()  # the receiver answers nothing until released
    done = write(repo, S, 2.0).commit("landed")
    assert repo.branches()["main"] == done
    assert receiver.got == []
    receiver.release.set()
    assert wait_for_deliveries(30)
    assert [e["commit"] for e in receiver.events()] == [done]


def test_a_failing_receiver_gets_the_same_delivery_again(
    repo: zarrlake.Repo, receiver: Receiver
) -> None:
    with_temp(repo)
    repo.add_webhook(receiver.url, secret=SECRET)
    receiver.fail = 2
    write(repo, S, 2.0).commit("retried")
    assert wait_for_deliveries(60)
    deliveries = [h["X-Zarrlake-Delivery"] for h, _ in receiver.got]
    assert len(deliveries) == 3
    assert len(set(deliveries)) == 1


def test_pull_request_events_and_its_merge(repo: zarrlake.Repo, receiver: Receiver) -> None:
    with_temp(repo)
    repo.create_branch("dev")
    write(repo, S, 2.0, branch="dev").commit("dev work")
    repo.add_webhook(receiver.url, secret=SECRET, events=("merge", "pull_request"))
    pr = repo.open_pull_request("dev", "main", title="Ship it", author="ana")
    pr.approve(by="bo")
    merged = pr.merge(author="bo")
    assert wait_for_deliveries(30)
    seen = [(e["event"], e.get("action"), e.get("commit")) for e in receiver.events()]
    assert seen == [
        ("pull_request", "opened", None),
        ("pull_request", "approved", None),
        ("merge", None, merged),
        ("pull_request", "merged", None),
    ]


def test_webhooks_are_listed_without_secrets_and_bad_ones_refused(repo: zarrlake.Repo) -> None:
    secret = repo.add_webhook("https://hooks.example/zl", events="commit")
    assert len(secret) == 64
    assert repo.webhooks() == [("https://hooks.example/zl", ("commit",))]
    with pytest.raises(zarrlake.InvalidInputError, match="http:// or https://"):
        repo.add_webhook("file:///etc/passwd")
    with pytest.raises(zarrlake.InvalidInputError, match="events must name one or more"):
        repo.add_webhook("https://hooks.example/x", events=("push",))
    with pytest.raises(zarrlake.InvalidInputError, match="at least 16 characters"):
        repo.add_webhook("https://hooks.example/x", secret="short")
    repo.remove_webhook("https://hooks.example/zl")
    assert repo.webhooks() == []
