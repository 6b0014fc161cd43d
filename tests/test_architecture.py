"""The package's shape, checked on its import statements: no import cycles (outside TYPE_CHECKING),
lower layers never import upper ones, and no module takes another package's private names.

The walk is ast over rocketpy/ (every import, including those inside functions, except under
``if TYPE_CHECKING:``): a module imports a module, or a package's ``__init__``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "rocketpy"
#: packages left out of the checks below (none now; the place to name one while it is reworked)
NOT_YET: tuple[str, ...] = ()
#: who may import whom, bottom up: a package imports none of those listed after it
LAYERS = (
    ("rocketpy.accel", "rocketpy.clock"),
    ("rocketpy.javacompat",),
    ("rocketpy.codecs",),
    ("rocketpy.remoting",),
    ("rocketpy.store", "rocketpy.namesrv", "rocketpy.sniffer"),
    ("rocketpy.broker", "rocketpy.client", "rocketpy.spark"),
)


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = ["rocketpy", *path.relative_to(ROOT).with_suffix("").parts]
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


MODULES = _modules()


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def _imports() -> dict[str, list[tuple[str, list[str]]]]:
    """module -> [(imported module, names taken from it)]; a name read as an attribute of an imported
    module (``message._SIZE_MAGIC``) counts as taken from it."""
    found: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
    for name, (path, is_pkg) in MODULES.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        package = name if is_pkg else name.rpartition(".")[0]
        bound: dict[str, str] = {}  # local name -> the module imported under it
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("rocketpy"):
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in MODULES:
                        found[name].append((sub, []))
                        bound[alias.asname or alias.name] = sub
                    elif target in MODULES:
                        found[name].append((target, [alias.name]))
            elif isinstance(node, ast.Import):
                found[name] += [(a.name, []) for a in node.names if a.name in MODULES]
                bound.update({a.asname: a.name for a in node.names if a.asname and a.name in MODULES})
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
                found[name].append((bound[node.value.id], [node.attr]))
    return found


IMPORTS = _imports()


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_the_walk_sees_the_imports() -> None:
    # a few imports that exist, so an empty walk cannot pass the tests below
    assert any(t == "rocketpy.codecs.frame" for t, _ in IMPORTS["rocketpy.codecs.command"])
    assert any(_package(t) == "rocketpy.javacompat" for t, _ in IMPORTS["rocketpy.remoting.tls"])
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    edges = {m: {t for t, _ in IMPORTS.get(m, ())} for m in MODULES}
    cycles = [c for c in _cycles(edges) if not all(m.startswith(NOT_YET) for m in c)]
    assert cycles == []


def test_lower_layers_do_not_import_upper_ones() -> None:
    rank = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
    wrong = []
    for module, targets in IMPORTS.items():
        mine = rank.get(_package(module))
        for target, _names in targets:
            theirs = rank.get(_package(target))
            if mine is not None and theirs is not None and theirs > mine:
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_no_private_names_across_packages() -> None:
    taken = []
    for module, targets in IMPORTS.items():
        if module.startswith(NOT_YET):
            continue
        for target, names in targets:
            # (the compiled extension is taken through rocketpy.accel, its one importer)
            private = [n for n in names if n.startswith("_") and not n.startswith("__") and n != "_speedups"]
            if target.rpartition(".")[2].startswith("_") and target != "rocketpy._speedups":
                private.append(target)
            if private and _package(target) != _package(module):
                taken.append(f"{module} takes {private} from {target}")
    assert taken == []
