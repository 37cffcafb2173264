"""What the maintenance operations share: progress bars and the crash points of the tests."""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

__all__ = ["fault", "progress_bar"]

_FAULT_ENV = "ZARRLAKE_GC_FAULT"
_faults: dict[str, int] = {}


def fault(point: str) -> None:
    """Fault injection for the crash tests: ``ZARRLAKE_GC_FAULT=point[:n]`` kills this process
    (SIGKILL, no cleanup) the ``n``-th time gc reaches ``point``."""
    want = os.environ.get(_FAULT_ENV)
    if not want:
        return
    name, _, n = want.partition(":")
    if name != point:
        return
    _faults[point] = _faults.get(point, 0) + 1
    if _faults[point] >= int(n or 1):
        os.kill(os.getpid(), signal.SIGKILL)


def progress_bar(show: bool | None, total: int | None, desc: str) -> tqdm[Any]:
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

    visible = sys.stderr.isatty() if show is None else show
    return tqdm(total=total, desc=desc, disable=not visible, file=sys.stderr, leave=False)


# -- reports -----------------------------------------------------------------------------------
