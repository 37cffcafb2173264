"""Make ``ds.lake`` available whenever xarray is importable, without importing xarray.

``import zarrlake`` must stay fast for users who never touch xarray, yet the accessor must be
there in either import order. If xarray is already imported, the accessor is registered now;
otherwise a finder on ``sys.meta_path`` waits for xarray's own import and registers it right
after xarray has finished loading.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Sequence
from types import ModuleType

__all__ = ["install"]

_TARGET = "xarray"
_lock = threading.Lock()


def _register() -> None:
    try:
        importlib.import_module("zarrlake.xarray")
    except Exception as exc:  # never break the user's own ``import xarray``
        import warnings

        warnings.warn(f"zarrlake: ds.lake is unavailable: {exc}", ImportWarning, stacklevel=2)


class _AfterLoad(importlib.abc.Loader):
    """Runs xarray's own loader, then registers the accessor."""

    def __init__(self, inner: importlib.abc.Loader) -> None:
        self.inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        _register()


class _Watcher(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TARGET:
            return None
        _uninstall()  # one shot: later imports of xarray find it in sys.modules
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        for finder in sys.meta_path:
            if spec is not None:
                break
            find = getattr(finder, "find_spec", None)
            if find is not None:
                spec = find(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _AfterLoad(spec.loader)
        return spec


_watcher = _Watcher()


def _uninstall() -> None:
    with _lock:
        if _watcher in sys.meta_path:
            sys.meta_path.remove(_watcher)


def install() -> None:
    """Register ``ds.lake`` now if xarray is loaded, else as soon as it is."""
    if _TARGET in sys.modules:
        _register()
        return
    with _lock:
        if _watcher not in sys.meta_path:
            sys.meta_path.insert(0, _watcher)
