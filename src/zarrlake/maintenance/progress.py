"""Progress bars of the maintenance operations."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

__all__ = ["progress_bar"]


def progress_bar(show: bool | None, total: int | None, desc: str) -> tqdm[Any]:
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

    visible = sys.stderr.isatty() if show is None else show
    return tqdm(total=total, desc=desc, disable=not visible, file=sys.stderr, leave=False)


# -- reports -----------------------------------------------------------------------------------
