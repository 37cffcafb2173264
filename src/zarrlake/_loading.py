"""Loading a heavy layer on first use (the catalog with SQLAlchemy, zarr, xarray) without the
cyclic garbage collector walking what it makes while it loads.

Importing them makes a few hundred thousand objects that live as long as the process
(classes, functions, module dictionaries). The collector, run every few hundred allocations,
would walk the new ones again and again as they pile up: about 90 ms of a cold open of a
dataset (``zarrlake.Repo.open`` and ``zarrlake.open_dataset`` in a fresh process, about
1.1 s in all). Here the collector is paused while the module loads; then every object alive
is put in the oldest generation (``gc.freeze()`` and ``gc.unfreeze()``), which only full
collections walk, as they would once those objects had survived two younger collections.
Nothing is kept from collection: garbage made before or during the import is found by the
next full collection (or ``gc.collect()``).

A program that has frozen objects itself since it imported zarrlake (a server that forks
its workers) keeps its permanent generation as it made it: then the collector is only paused,
and walks the new objects once it runs again. (What the permanent generation held when
zarrlake was imported, a few hundred tuples the interpreter froze at its start, is put in the
oldest generation with the rest.)
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

__all__ = ["lazy_names", "load_module"]

_FROZEN = gc.get_freeze_count()
"""The size of the permanent generation when zarrlake was imported."""


def load_module(name: str) -> ModuleType:
    """The module ``name``, imported now if it is not yet (see the module's docstring)."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    enabled = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(name)
    finally:
        if gc.get_freeze_count() <= _FROZEN:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


def lazy_names(
    package: str, modules: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` (PEP 562) of ``package`` for the names each of
    ``modules`` defines (module -> names): a name's module is loaded with
    :func:`load_module` on first use, and the name is then kept in the package. So a
    package can re-export its submodules' names while importing one of its submodules loads
    none of the others.

    A name may not be also a submodule's: importing that submodule would bind the module
    to the name in the package, in place of what the name is (``ImportError``)."""
    module = sys.modules[package]
    names = {name: source for source, defined in modules.items() for name in defined}
    folder = os.path.dirname(module.__file__ or "")
    clash = sorted(names.keys() & {n.removesuffix(".py") for n in os.listdir(folder)})
    if clash:
        raise ImportError(f"{package}: {', '.join(clash)} would be both a name and a submodule")

    def getattr_(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(load_module(names[name]), name)
        setattr(module, name, value)
        return value

    def dir_() -> list[str]:
        return sorted({*vars(module), *names})

    return getattr_, dir_
