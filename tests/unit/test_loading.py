"""Loading a heavy layer on first use (``zarrlake._loading``): the cyclic garbage collector does
not walk what the layer makes while it loads, and is left as the program had it. Each case
runs in a fresh interpreter, where nothing has loaded the catalog, zarr or xarray yet."""

from __future__ import annotations

import subprocess
import sys

PRELUDE = """
import gc, weakref, zarrlake
runs = []
gc.callbacks.append(lambda phase, info: runs.append(info["generation"]) if phase == "start" else None)

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)
"""


def _run(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + code],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_no_collection_runs_while_the_catalog_loads_and_garbage_is_still_collected() -> None:
    out = _run(
        "garbage = cycle()\n"
        "runs.clear()\n"
        "zarrlake.Repo\n"
        "print(len(runs), gc.isenabled())\n"
        "print(garbage() is not None, gc.collect() > 0, garbage() is None)\n"
    )
    assert out == ["0 True", "True True True"]


def test_a_collector_the_program_disabled_stays_disabled() -> None:
    out = _run("gc.disable()\nzarrlake.open_dataset\nprint(gc.isenabled(), len(runs))\n")
    assert out == ["False 0"]


def test_objects_the_program_froze_stay_frozen() -> None:
    """A forking server freezes what its workers share; a later first use of a layer leaves
    them in the permanent generation (it only pauses the collector)."""
    out = _run(
        "shared = [Node()]\n"
        "gc.freeze()\n"
        "print(any(o is shared for o in gc.get_objects()))\n"
        "runs.clear()\n"
        "zarrlake.Repo\n"
        "print(any(o is shared for o in gc.get_objects()), gc.isenabled(), len(runs) > 0)\n"
    )
    # the collector ran once enabled again (over the new objects), never over the frozen list
    assert out == ["False", "False True True"]


def test_a_sessions_store_loads_zarr_the_same_way(tmp_path) -> None:
    out = _run(
        "import sys\n"
        f"repo = zarrlake.Repo.create({str(tmp_path / 'lake')!r})\n"
        "session = repo.readonly_session('main')\n"
        "runs.clear()\n"
        "print('zarr' in sys.modules)\n"
        "store = session.store\n"
        "print('zarr' in sys.modules, len(runs), gc.isenabled(), store.read_only)\n"
    )
    assert out == ["False", "True 0 True True"]


def test_a_layer_that_cannot_load_names_its_extra_and_leaves_the_collector_running(
    tmp_path,
) -> None:
    out = _run(
        "import sys\n"
        "sys.modules['zarrlake.ui.widgets'] = None  # as if the ui extra were not installed\n"
        f"repo = zarrlake.Repo.create({str(tmp_path / 'lake')!r})\n"
        "try:\n"
        "    repo.widget()\n"
        "except zarrlake.MissingExtraError as exc:\n"
        "    print(exc.kind, 'zarrlake[ui]' in str(exc), isinstance(exc, ImportError))\n"
        "print(gc.isenabled())\n"
    )
    assert out == ["missing_extra True True", "True"]


def test_a_name_that_is_also_a_submodule_is_refused(tmp_path) -> None:
    """A package may not load a name lazily that one of its submodules also bears: importing
    the submodule would put the module in the name's place."""
    pkg = tmp_path / "clashing"
    pkg.mkdir()
    (pkg / "graph.py").write_text("def graph():\n    return 1\n")
    (pkg / "__init__.py").write_text(
        "from zarrlake._loading import lazy_names\n"
        "__getattr__, __dir__ = lazy_names(__name__, {'clashing.graph': ('graph',)})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", "import clashing"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert "ImportError: clashing: graph would be both a name and a submodule" in done.stderr
