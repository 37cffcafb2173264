"""How long a storage call may take, and how it is retried within that time.

A call is tried up to :data:`ATTEMPTS` times, with jittered exponential backoff, on failures
that may pass (a refused or dropped connection, a 5xx, throttling, a timeout); answers that
are final (missing, already there, a bad request, our own errors) are raised at once.

On S3 the whole call, every attempt and pause included, also has a **deadline** derived from
the client's own configuration: botocore's attempts times (``connect_timeout`` +
``read_timeout``), the longest one botocore request may legitimately take with its own
retries (:func:`s3_deadline`). An attempt still running at the deadline is cancelled, and no
attempt starts after it: without that, our attempts multiply s3fs's and botocore's, and an
endpoint that accepts connections but never answers held a read for minutes.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from zarrlake.errors import StorageError, ZarrlakeError

__all__ = ["ATTEMPTS", "Deadline", "retrying", "retrying_async", "s3_deadline"]

ATTEMPTS = 5
_FINAL = (
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    NotImplementedError,
    ImportError,
    TypeError,
    ValueError,
    AttributeError,
    KeyError,
    ZarrlakeError,
)
# botocore's total attempts per request when its configuration names none, by retry mode
_BOTOCORE_ATTEMPTS = {"legacy": 5, "standard": 3, "adaptive": 3}


@dataclass(frozen=True, slots=True)
class Deadline:
    """The longest a storage call may take: ``attempts`` x (``connect`` + ``read``) seconds,
    and where it goes (``endpoint``, for the message when it passes)."""

    connect: float
    read: float
    attempts: int
    endpoint: str

    @property
    def seconds(self) -> float:
        return self.attempts * (self.connect + self.read)

    def describe(self) -> str:
        return (
            f"{self.seconds:g} s ({self.attempts} botocore attempt(s) x (connect_timeout "
            f"{self.connect:g} s + read_timeout {self.read:g} s))"
        )


def s3_deadline(client: Any) -> Deadline:
    """The deadline of a call through a botocore S3 ``client``, from its resolved
    configuration (``storage_options['config_kwargs']``, botocore's environment and defaults:
    s3fs's 5 s and 15 s timeouts, 5 attempts in botocore's legacy retry mode, 3 in the
    others)."""
    config = client.meta.config
    retries = dict(config.retries or {})
    attempts = retries.get("total_max_attempts")
    if attempts is None:
        attempts = _BOTOCORE_ATTEMPTS.get(str(retries.get("mode", "legacy")), 5)
    return Deadline(
        float(config.connect_timeout),
        float(config.read_timeout),
        max(1, int(attempts)),
        str(client.meta.endpoint_url),
    )


def _pause(attempt: int) -> float:
    return random.uniform(0, 0.05 * 2**attempt)


def retrying[T](fn: Callable[[], T]) -> T:
    """``fn()``, retried with jittered exponential backoff on transient failures; answers
    that are final are raised at once."""
    for attempt in range(ATTEMPTS):
        try:
            return fn()
        except _FINAL:
            raise
        except Exception:
            if attempt == ATTEMPTS - 1:
                raise
            time.sleep(_pause(attempt))
    raise AssertionError("unreachable")


async def retrying_async[T](
    fn: Callable[[], Awaitable[T]], deadline: Deadline | None = None, what: str = "a call"
) -> T:
    """Async version of :func:`retrying`; with a ``deadline``, the call (``what``, for the
    message) ends with a :class:`StorageError` once it has taken that long in all."""
    if deadline is None:
        for attempt in range(ATTEMPTS):
            try:
                return await fn()
            except _FINAL:
                raise
            except Exception:
                if attempt == ATTEMPTS - 1:
                    raise
                await asyncio.sleep(_pause(attempt))
        raise AssertionError("unreachable")
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline.seconds
    last: Exception | None = None  # the failure of the attempt before
    for attempt in range(ATTEMPTS):
        timeout = asyncio.timeout_at(end)
        try:
            async with timeout:
                return await fn()
        except _FINAL:
            raise
        except Exception as exc:
            if timeout.expired():  # cut off: ``exc`` says only that
                raise _late(what, deadline, last) from last
            last = exc
            if attempt == ATTEMPTS - 1:
                raise
            pause = _pause(attempt)
            if loop.time() + pause >= end:
                raise _late(what, deadline, exc) from exc
            await asyncio.sleep(pause)
    raise AssertionError("unreachable")


def _late(what: str, deadline: Deadline, cause: BaseException | None) -> StorageError:
    last = "" if cause is None else f"; an attempt failed with {cause!r}"
    return StorageError(
        f"{what} through {deadline.endpoint} gave no result within its deadline of "
        f"{deadline.describe()}: the endpoint is unreachable or not answering{last}. Retry "
        "later; if it is only slow, raise connect_timeout and read_timeout in "
        "storage_options['config_kwargs']"
    )
