"""Webhook deliveries: a JSON POST per event to each webhook that asked for it, signed with
its secret, sent by a background thread of this process, retried with backoff. A commit
never waits for them: it has landed before a delivery is queued, and a receiver that is slow
or down delays nothing but its own deliveries.

Headers: ``X-Zarrlake-Event`` (``commit``, ``merge``, ``pull_request``), ``X-Zarrlake-Delivery``
(a fresh id, the same for every attempt), ``X-Zarrlake-Signature``: ``sha256=`` and the hex
HMAC-SHA256 of the body with the webhook's secret. A receiver checks it before trusting the
body. When the process exits, deliveries still queued get up to :data:`EXIT_GRACE` seconds.
"""

from __future__ import annotations

import atexit
import hashlib
import hmac
import json
import queue
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import zarrlake.process as process
from zarrlake.model.rules import Webhook

__all__ = ["ATTEMPTS", "deliver", "sign", "wait_for_deliveries"]

ATTEMPTS = 5  # per delivery; waits of 0.5, 1, 2, 4 s between them
TIMEOUT = 10.0  # seconds per attempt
EXIT_GRACE = 5.0

_queue: queue.Queue[tuple[Webhook, str, bytes, str]] = queue.Queue()
_lock = threading.Lock()
_worker: threading.Thread | None = None
_pending = 0
_idle = threading.Condition(_lock)


def sign(secret: str, body: bytes) -> str:
    """The ``X-Zarrlake-Signature`` header's value for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _post(hook: Webhook, event: str, body: bytes, delivery: str) -> bool:
    import urllib.error  # loaded by the first delivery, not by every commit's import
    import urllib.request

    req = urllib.request.Request(
        hook.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": "zarrlake-webhook",
            "X-Zarrlake-Event": event,
            "X-Zarrlake-Delivery": delivery,
            "X-Zarrlake-Signature": sign(hook.secret, body),
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
            return 200 <= int(resp.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _run() -> None:
    global _pending
    while True:
        hook, event, body, delivery = _queue.get()
        for attempt in range(ATTEMPTS):
            if _post(hook, event, body, delivery):
                break
            if attempt + 1 < ATTEMPTS:
                time.sleep(0.5 * 2**attempt)
        with _idle:
            _pending -= 1
            _idle.notify_all()


def deliver(hooks: Sequence[Webhook], event: str, payload: dict[str, Any]) -> None:
    """Queue ``payload`` for every hook that asked for ``event`` (returns at once)."""
    global _worker, _pending
    chosen = [h for h in hooks if event in h.events]
    if not chosen:
        return
    body = json.dumps(payload, sort_keys=True, default=str).encode()
    with _idle:
        # one worker per process, started on first use (and again in a forked child)
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_run, name="zarrlake-webhooks", daemon=True)
            _worker.start()
        for h in chosen:
            _pending += 1
            _queue.put((h, event, body, uuid.uuid4().hex))


def wait_for_deliveries(timeout: float) -> bool:
    """Wait until every queued delivery was made or given up; whether they all were."""
    deadline = time.monotonic() + timeout
    with _idle:
        while _pending > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _idle.wait(left)
    return True


def _after_fork_in_child() -> None:
    # the parent's worker and queue are not the child's: start empty
    global _queue, _worker, _pending
    _queue, _worker, _pending = queue.Queue(), None, 0


process.on_fork(_after_fork_in_child)
atexit.register(wait_for_deliveries, EXIT_GRACE)
