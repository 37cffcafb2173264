"""The package's structure, as docs/architecture.md draws it: no import circle (lazy imports
inside functions included), layers import only downward, no module reads another object's
private fields, and no module grows past what can be read in one sitting."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "src" / "zarrlake"
MAX_LINES = 600

# layer -> rank; a module may import modules of its own rank or lower (a package may import
# its own submodules). Ranks follow shared/DESIGN.md's table.
LAYERS: dict[str, int] = {
    "zarrlake.errors": 0,
    "zarrlake.types": 0,
    "zarrlake._xarray_hook": 0,
    "zarrlake.faults": 0,
    "zarrlake.process": 0,
    "zarrlake._optional": 0,
    "zarrlake._loading": 0,
    "zarrlake.display": 0,
    "zarrlake.model": 1,
    "zarrlake.catalog": 2,
    "zarrlake.objects": 2,
    "zarrlake.store": 2,
    "zarrlake.core": 3,
    "zarrlake.session": 4,
    "zarrlake.history": 4,
    "zarrlake.maintenance": 4,
    "zarrlake.review": 4,
    "zarrlake.repo": 5,
    "zarrlake.virtual": 5,
    "zarrlake": 6,
    "zarrlake.urls": 6,
    "zarrlake.xarray": 7,
    "zarrlake.integrations": 7,
    "zarrlake.demo": 8,
    "zarrlake.ui": 8,
    "zarrlake.gateway": 8,
    "zarrlake.cli": 9,
    "zarrlake.testing": 9,
    "zarrlake.__main__": 10,
}


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = p.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


MODULES = _modules()


def _layer(name: str) -> str:
    best = "zarrlake"
    for layer in LAYERS:
        if (name == layer or name.startswith(layer + ".")) and len(layer) > len(best):
            best = layer
    return best


def _imports(name: str) -> set[str]:
    tree = ast.parse(MODULES[name].read_text())
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _imports(name) for name in MODULES}


def test_no_import_circle() -> None:
    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(u: str) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(GRAPH[u]):
            if state.get(v) == 1:
                circles.append([*stack[stack.index(v) :], v])
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name)
    assert circles == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_flow_down(name: str) -> None:
    mine = _layer(name)
    upward = [
        dep
        for dep in sorted(GRAPH[name])
        if LAYERS[_layer(dep)] > LAYERS[mine] and not dep.startswith(name + ".")
    ]
    assert upward == [], f"{name} ({mine}) imports upward"


# fsspec spells its public async API with a leading underscore (``await fs._cat_file(...)``,
# as zarr's own FsspecStore calls it): methods, not private fields
FSSPEC_ASYNC_API = frozenset({"_cat_file", "_pipe_file", "_exists", "_rm"})


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_field_of_another_object(name: str) -> None:
    tree = ast.parse(MODULES[name].read_text())
    reads = [
        f"{ast.unparse(node.value)}.{node.attr} (line {node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        and not (isinstance(node.value, ast.Name) and node.value.id == "argparse")
        and node.attr not in FSSPEC_ASYNC_API
    ]
    assert reads == []


TESTS = ROOT.parents[1] / "tests"
# IPython's display protocol: a public method, spelled with underscores
DISPLAY_PROTOCOL = frozenset({"_repr_html_", "_repr_mimebundle_"})


@pytest.mark.parametrize(
    "path", sorted(TESTS.rglob("*.py")), ids=lambda p: str(p.relative_to(TESTS))
)
def test_no_test_reads_a_private_field_of_another_object(path: Path) -> None:
    """Tests go through public APIs or ``zarrlake.testing``, so the engine can change
    without rewriting them."""
    tree = ast.parse(path.read_text())
    reads = [
        f"{ast.unparse(node)} (line {node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        and node.attr not in DISPLAY_PROTOCOL
    ]
    assert reads == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_is_small(name: str) -> None:
    assert len(MODULES[name].read_text().splitlines()) <= MAX_LINES


ROW_MODULES = {"zarrlake.catalog.rows", "zarrlake.catalog.schema", "zarrlake.catalog.publish"}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_catalog_rows_stay_in_the_catalog(name: str) -> None:
    """Rows, tables and statements are the catalog's own: the engine sees model values through
    ``catalog.interface`` (``zarrlake.testing`` may read tables, for tests that damage them)."""
    if name.startswith(("zarrlake.catalog", "zarrlake.testing")):
        return
    assert _imports(name) & ROW_MODULES == set()


ENGINE_RULES = {"merge_base", "detect_conflicts", "plan_merge", "session_status", "lay_out"}


def _delegates_to_model(fn: ast.AST, from_model: set[str]) -> bool:
    return any(
        isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in from_model
        for c in ast.walk(fn)
    )


@pytest.mark.parametrize("name", sorted(MODULES))
def test_engine_rules_have_one_owner(name: str) -> None:
    """Merge bases, conflicts, merge plans, session status and the graph's layout are decided
    in ``model/`` only: elsewhere a function of that name may only feed the model's rule with
    data (``history`` does, from the catalog); every front end asks the engine."""
    if name.startswith("zarrlake.model"):
        return
    tree = ast.parse(MODULES[name].read_text())
    from_model = {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("zarrlake.model")
        for a in n.names
    }
    own_rules = {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and n.name in ENGINE_RULES
        and not _delegates_to_model(n, from_model)
    }
    assert own_rules == set()
