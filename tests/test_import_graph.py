"""No import circles: the graph of imports between the modules of lwec_tasks/ and flows/ has no cycle.

The graph is read from the source with :mod:`ast`, nothing is imported. Every
``import`` and ``from ... import`` of a project module counts, at the top of a
module or inside a function (an import moved into a function to dodge a circle
is still the circle); imports under ``if TYPE_CHECKING:`` do not run and do not
count. ``from a.b import c`` is an edge to the module ``a.b.c`` when that is a
module, else to ``a.b``, where a package's ``__init__`` is looked through:

- a lazy ``__init__`` (a ``_EXPORTS`` table of name → module, loaded by
  ``__getattr__``) leads to the module the table names for ``c``;
- an eager ``__init__`` that takes ``c`` from one of its submodules leads to
  that submodule — unless it is the importing module itself, which then
  depends on the package's ``__init__`` that imports it: a cycle;
- any other name leads to the ``__init__`` itself.

Importing a module also runs the ``__init__`` of each package above it; a
module outside such a package therefore depends on that ``__init__`` too (a
package importing its own submodules is no cycle).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("lwec_tasks", "flows")


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    lazy_exports: dict[str, str] = field(default_factory=dict)  # name → module, from a ``_EXPORTS`` table
    reexports: dict[str, str] = field(default_factory=dict)  # name → module it is imported from (top level)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def read_modules(root: Path = ROOT, packages=PACKAGES) -> dict[str, Module]:
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            name = module_name(path, root)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            modules[name] = Module(name, path, path.name == "__init__.py", tree)
    for module in modules.values():
        if module.is_package:
            module.lazy_exports = lazy_exports(module)
            module.reexports = {
                alias.asname or alias.name: target
                for statement in module.tree.body if isinstance(statement, ast.ImportFrom)
                for target in [absolute(module, statement)] for alias in statement.names
            }
    return modules


def lazy_exports(package: Module) -> dict[str, str]:
    """The ``_EXPORTS = {name: module}`` table of a lazy ``__init__``; modules relative to the package or absolute."""
    for statement in package.tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets) and isinstance(
                statement.value, ast.Dict):
            table = ast.literal_eval(statement.value)
            return {name: value if value.split(".")[0] in PACKAGES else f"{package.name}.{value}"
                    for name, value in table.items()}
    return {}


def absolute(module: Module, statement: ast.ImportFrom) -> str:
    """The absolute module name of a (possibly relative) ``from ... import``."""
    if not statement.level:
        return statement.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base.pop()
    base = base[: len(base) - (statement.level - 1)]
    return ".".join([*base, statement.module] if statement.module else base)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_statements(nodes):
    """Every Import / ImportFrom in ``nodes`` and below, at any depth, except the bodies of ``if TYPE_CHECKING:``."""
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and is_type_checking(node.test):
            yield from import_statements(node.orelse)
        else:
            yield from import_statements(ast.iter_child_nodes(node))


def known_prefix(name: str, modules: dict[str, Module]) -> str | None:
    """The longest prefix of the dotted ``name`` that is a project module (None: not the project's)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def resolve_name(importer: str, package: str, name: str, modules: dict[str, Module]) -> str:
    """The module that ``from package import name`` in ``importer`` depends on."""
    if f"{package}.{name}" in modules:
        return f"{package}.{name}"
    init = modules[package]
    if name in init.lazy_exports:
        return known_prefix(init.lazy_exports[name], modules) or package
    source = known_prefix(init.reexports.get(name, ""), modules)
    if source in (None, package, importer):
        return package  # defined in the __init__, or taken from the importer itself: the __init__ it imports
    return source


def ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def import_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    """module → the project modules it imports (directly, see the module docstring)."""
    graph = {name: set() for name in modules}
    for module in modules.values():
        targets = set()
        for statement in import_statements(module.tree.body):
            if isinstance(statement, ast.Import):
                targets.update(known_prefix(alias.name, modules) for alias in statement.names)
                continue
            source = absolute(module, statement)
            found = known_prefix(source, modules)
            if found is None:
                continue
            if found != source or not modules[found].is_package:
                targets.add(found)
                continue
            targets.update(resolve_name(module.name, found, alias.name, modules) for alias in statement.names
                           if alias.name != "*")
        targets.discard(None)
        for target in list(targets):  # the __init__ of every package above the target that the importer is outside of
            targets.update(p for p in ancestors(target) if p in modules and p not in (*ancestors(module.name),
                                                                                       module.name))
        targets.discard(module.name)
        graph[module.name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module: modules that all import each other, indirectly."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []

    def connect(node):  # Tarjan; the graph is a few hundred modules, recursion is fine
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(set(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(components, key=min)


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a → … → a, as a list of modules) per circle (:func:`circles`)."""
    return [cycle_in(graph, component) for component in circles(graph)]


def cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first inside the component)."""
    start = min(component)
    parents, frontier = {start: None}, [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & component):
                if nxt == start:
                    path = [node]
                    while parents[path[-1]] is not None:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if nxt not in parents:
                    parents[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle in the component {sorted(component)}")


def test_no_import_cycles():
    graph = import_graph(read_modules())
    found = circles(graph)
    message = "\n".join(f"{' -> '.join(cycle_in(graph, component))}   (the circle: {', '.join(sorted(component))})"
                        for component in found)
    print(message)
    assert not found, f"import cycles:\n{message}"


def test_the_graph_sees_top_level_function_level_and_package_imports():
    modules = read_modules()
    graph = import_graph(modules)
    assert len(modules) > 50 and "flows.consensus" in graph and "lwec_tasks.io" in graph
    assert "lwec_tasks.core.auto_k" in graph["lwec_tasks.core.lwea"]  # top level
    assert "lwec_tasks.io.catalog" in graph["lwec_tasks.preflight"]  # inside a function
    assert "lwec_tasks.tracking.model" in graph["lwec_tasks.tasks.track"]  # inside a function
    # `from lwec_tasks import lwea` leads through the lazy _EXPORTS table to the defining module
    assert resolve_name("x", "lwec_tasks", "lwea", modules) == "lwec_tasks.core.lwea"
    assert resolve_name("x", "lwec_tasks.io", "prune_runs", modules) == "lwec_tasks.io.history"
    assert resolve_name("x", "lwec_tasks.tracking", "run_writer", modules) == "lwec_tasks.tracking.runs"
    # an eager __init__ leads to the submodule it takes the name from, or to itself for the submodule's own names
    assert resolve_name("x", "lwec_tasks.baselines", "eac", modules) == "lwec_tasks.baselines.coassociation"
    assert resolve_name("lwec_tasks.baselines.coassociation", "lwec_tasks.baselines", "eac",
                        modules) == "lwec_tasks.baselines"


def test_cycles_are_found_and_shown(tmp_path):
    package = tmp_path / "lwec_tasks"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from lwec_tasks.b import f\n")
    (package / "b.py").write_text("def f():\n    from lwec_tasks import c\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lwec_tasks import a\n"
                                  "from . import sub\n")
    (package / "sub" / "__init__.py").write_text("from .d import g\n")
    (package / "sub" / "d.py").write_text("from lwec_tasks.sub import g\n")  # its own name back: a cycle
    (package / "sub" / "e.py").write_text("from lwec_tasks.sub import g\nimport lwec_tasks.a\n")
    modules = read_modules(tmp_path, ("lwec_tasks",))
    graph = import_graph(modules)
    assert graph["lwec_tasks.c"] == {"lwec_tasks.sub"}  # the TYPE_CHECKING import does not count
    assert graph["lwec_tasks.sub.e"] == {"lwec_tasks.sub.d", "lwec_tasks.a"}
    assert find_cycles(graph) == [["lwec_tasks.sub", "lwec_tasks.sub.d", "lwec_tasks.sub"]]
    (package / "c.py").write_text("import lwec_tasks.a\n")
    assert find_cycles(import_graph(read_modules(tmp_path, ("lwec_tasks",)))) == [
        ["lwec_tasks.a", "lwec_tasks.b", "lwec_tasks.c", "lwec_tasks.a"],
        ["lwec_tasks.sub", "lwec_tasks.sub.d", "lwec_tasks.sub"],
    ]
