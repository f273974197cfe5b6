"""The package's layering, read from the code: no import circle, no import back up a layer.

Every ``src/coreselect/**/*.py`` is parsed with :mod:`ast`; every import counts, at any depth
(function-local ones and ``if TYPE_CHECKING:`` blocks too), relative or absolute. An import names
the most specific file it reaches: ``from .io import chunks`` is ``io/chunks.py``,
``from .io import Dataset`` is ``io/__init__.py``. The layers, bottom to top, are in ``LAYERS``
(docs/architecture.md draws the same picture).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "coreselect"

# Bottom to top; a file may import only files of its own layer or of lower ones. A prefix ends
# in "/" for a folder, otherwise it names one file (paths relative to src/coreselect).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # the package root imports only ``errors`` itself: its public names load lazily, by name
    ("base", ("errors.py", "progress.py", "utils.py", "__init__.py")),
    ("core", ("core/",)),
    ("io", ("io/",)),
    ("store and datasets", ("datasets/", "store/")),
    ("engines", ("engines/",)),
    ("selection", ("selection/",)),
    # spec.py and autok.py: the old import paths of selection's modules, kept for users
    ("faces", ("selector.py", "tuning.py", "baselines/", "evaluation/", "spec.py", "autok.py")),
    ("cli", ("cli/", "__main__.py")),
]

# Known exceptions, each (importer, imported) with its reason beside it; each is to be removed,
# and an entry whose import is gone fails test_every_known_edge_is_still_there.
KNOWN: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every file of the package."""
    out = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The package modules one file imports (dotted names)."""
    here = name if _is_package(path) else name.rpartition(".")[0]
    found: set[str] = set()

    def resolve(dotted: str) -> str | None:
        # the longest prefix that is a module of ours: `coreselect.io.chunks.x` -> io/chunks
        parts = dotted.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in modules:
                return candidate
            parts.pop()
        return None

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    target = resolve(alias.name)
                    if target:
                        found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[:len(base) - (node.level - 1)]
                dotted = ".".join(base + ([node.module] if node.module else []))
            else:
                dotted = node.module or ""
            if dotted.split(".")[0] != PACKAGE:
                continue
            target = resolve(dotted)
            if target is None:
                continue
            for alias in node.names:
                sub = f"{dotted}.{alias.name}"
                found.add(sub if sub in modules else target)
    found.discard(name)
    return found


def _graph() -> tuple[dict[str, set[str]], dict[str, Path]]:
    modules = _modules()
    return {name: _imports(path, name, modules) for name, path in modules.items()}, modules


def _relative(path: Path) -> str:
    return path.relative_to(SRC / PACKAGE).as_posix()


def layer_of(relative: str) -> int:
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if relative == prefix or (prefix.endswith("/") and relative.startswith(prefix)):
                return index
    raise AssertionError(f"{relative} is in no layer: add it to LAYERS in tests/test_layers.py")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one file (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def _edges_within(component: list[str], graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    members = set(component)
    return sorted((a, b) for a in component for b in graph[a] if b in members)


def test_every_file_is_in_a_layer():
    _, modules = _graph()
    for path in modules.values():
        layer_of(_relative(path))


def test_no_import_circle():
    graph, modules = _graph()
    name_of = {name: _relative(path) for name, path in modules.items()}
    # the known edges are left out, so a circle they close does not fail the test
    pruned = {a: {b for b in targets if (name_of[a], name_of[b]) not in KNOWN}
              for a, targets in graph.items()}
    problems = []
    for component in _cycles(pruned):
        edges = ", ".join(f"{name_of[a]} -> {name_of[b]}"
                          for a, b in _edges_within(component, pruned))
        problems.append(f"circle among {', '.join(name_of[m] for m in component)}: {edges}")
    assert not problems, "\n".join(problems)


def test_no_import_back_up_a_layer():
    graph, modules = _graph()
    problems = []
    for importer, targets in sorted(graph.items()):
        source = _relative(modules[importer])
        for target in sorted(targets):
            imported = _relative(modules[target])
            if (source, imported) in KNOWN:
                continue
            low, high = layer_of(source), layer_of(imported)
            if high > low:
                problems.append(f"{source} ({LAYERS[low][0]}) imports {imported} "
                                f"({LAYERS[high][0]})")
    assert not problems, "\n".join(problems)


def test_the_reader_sees_circles_and_back_up_imports():
    """The graph reader itself: a made-up package with one circle and one import back up."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _edges_within(["a", "b", "c"], graph) == [("a", "b"), ("b", "c"), ("c", "a")]
    assert layer_of("core/entropy.py") < layer_of("store/build.py") < layer_of("cli/select.py")


def test_relative_and_local_imports_are_read(tmp_path):
    """``from . import x`` names the submodule; an import inside a function counts."""
    modules = {"coreselect": tmp_path / "__init__.py",
               "coreselect.core": tmp_path / "core" / "__init__.py",
               "coreselect.core.a": tmp_path / "core" / "a.py",
               "coreselect.core.b": tmp_path / "core" / "b.py",
               "coreselect.io": tmp_path / "io" / "__init__.py"}
    text = ("from . import b\n"
            "def f():\n"
            "    from ..io import Thing\n"
            "    import coreselect.core.b.name\n")
    path = tmp_path / "core" / "a.py"
    path.parent.mkdir()
    path.write_text(text)
    assert _imports(path, "coreselect.core.a", modules) == {"coreselect.core.b", "coreselect.io"}


def test_every_known_edge_is_still_there():
    """An entry of ``KNOWN`` whose import is gone is removed from the list, so the list shrinks."""
    graph, modules = _graph()
    edges = {(_relative(modules[a]), _relative(modules[b])) for a, targets in graph.items()
             for b in targets}
    assert not KNOWN - edges, f"no longer imported, remove from KNOWN: {sorted(KNOWN - edges)}"
