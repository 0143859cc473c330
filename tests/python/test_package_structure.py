"""The structure of the ferrograd package: no import cycles, ferrograd imports at module level,
no submodule hidden by a package attribute of the same name.

The import graph is read statically from python/ferrograd (``ast``). An edge ``a -> b`` means
that importing ``a`` runs a module-level ``import b`` / ``from b import ...`` (in ``if``, ``try``
and class bodies too, not under ``if TYPE_CHECKING:``). ``from p import x`` imports ``p.x`` when
that is a submodule, else reads ``x`` from ``p``. The ``__init__`` of the packages on the way to
an imported submodule are not edges (the package's own ``__init__`` runs first, whatever one
imports). The native module ``ferrograd._core`` has no source: it is a leaf.

A submodule importing a name from its own package (``from .. import zeros``, ``import
ferrograd``) closes a cycle through the package's ``__init__``, which imports the submodule: such
names come from the modules that define them (``ferrograd._core``, ``_factories``, ``_functions``,
``_dtype``, ``autograd.grad_mode``, ...).
"""

import ast
import importlib
import pkgutil
import subprocess
import sys
import textwrap
import types
from collections import deque
from pathlib import Path

import ferrograd

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
PACKAGE = "ferrograd"

# (importing module, imported module) -> why the import has to wait until a function runs.
# Imports of optional dependencies (mpi4py, torch) are not listed: only ferrograd's own modules.
ALLOWED_BODY_IMPORTS: dict[tuple[str, str], str] = {}

# submodules that a package attribute of the same name hides -> why
ALLOWED_HIDDEN_SUBMODULES = {
    # PyTorch's layout: torch.autograd.gradcheck is the function, and scripts import the module
    # by its path (``from torch.autograd.gradcheck import gradgradcheck``), so it keeps its name
    "ferrograd.autograd.gradcheck": "the function autograd.gradcheck",
    # the same in torch.nn.utils: the legacy hook-based functions and their modules
    # (``from torch.nn.utils.spectral_norm import SpectralNorm``)
    "ferrograd.nn.utils.spectral_norm": "the function nn.utils.spectral_norm",
    "ferrograd.nn.utils.weight_norm": "the function nn.utils.weight_norm",
}


def _source_modules():
    """{module name: source path} of every module of the package."""
    modules = {}
    for path in sorted((PYTHON_DIR / PACKAGE).rglob("*.py")):
        parts = path.relative_to(PYTHON_DIR).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


SOURCES = _source_modules()
MODULES = set(SOURCES) | {f"{PACKAGE}._core"}  # the extension module: no source, no imports


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_statements(tree):
    """(statement, at_module_level) for every import statement of a module's ast."""

    def walk(nodes, top):
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield node, top
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from walk(ast.iter_child_nodes(node), False)
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                yield from walk(node.orelse, top)
            elif isinstance(node, ast.stmt):
                yield from walk(ast.iter_child_nodes(node), top)
            elif isinstance(node, (ast.excepthandler, ast.match_case)):
                yield from walk(node.body, top)

    yield from walk(tree.body, True)


def _imported_modules(module, node):
    """The ferrograd modules that an import statement of ``module`` imports."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == PACKAGE]
    if node.level == 0:
        base = node.module
    else:
        is_package = SOURCES[module].name == "__init__.py"
        base = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        if node.module:
            base = f"{base}.{node.module}"
    if base.split(".")[0] != PACKAGE:
        return []
    found = {f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names}
    return sorted(found)


def _scan():
    """(graph of module-level imports, [(module, line, imported module)] of function-body imports)."""
    graph = {module: set() for module in MODULES}
    body_imports = []
    for module, path in SOURCES.items():
        for node, top in _import_statements(ast.parse(path.read_text(), str(path))):
            for target in _imported_modules(module, node):
                if top:
                    graph[module].add(target)
                else:
                    body_imports.append((module, node.lineno, target))
    return graph, body_imports


GRAPH, BODY_IMPORTS = _scan()


def _strongly_connected_components(graph):
    """Tarjan's algorithm, iteratively."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
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
                    components.append(sorted(component))
    return components


def _shortest_cycle(graph, start):
    """A shortest path start -> ... -> start, as a list of modules."""
    parent = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for succ in sorted(graph[node]):
            if succ == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if succ not in parent:
                parent[succ] = node
                queue.append(succ)
    return None


def test_graph_covers_the_package():
    assert len(SOURCES) > 50
    assert f"{PACKAGE}.nn.functional.activation" in GRAPH
    assert GRAPH[f"{PACKAGE}._core"] == set()
    # spot checks of the edge rules
    assert f"{PACKAGE}._core" in GRAPH[f"{PACKAGE}._factories"]  # from . import _core
    assert f"{PACKAGE}.nn.functional" in GRAPH[f"{PACKAGE}.nn.modules.linear"]  # from .. import functional as F
    assert f"{PACKAGE}.nn.modules.module" in GRAPH[f"{PACKAGE}.nn.modules.linear"]  # from .module import Module


def test_no_import_cycles():
    cyclic = [c for c in _strongly_connected_components(GRAPH) if len(c) > 1 or c[0] in GRAPH[c[0]]]
    cycles = [" -> ".join(_shortest_cycle(GRAPH, component[0])) for component in cyclic]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_imports_in_function_bodies():
    found = {(module, target) for module, _, target in BODY_IMPORTS}
    unexpected = [f"{module}:{line} imports {target}" for module, line, target in BODY_IMPORTS
                  if (module, target) not in ALLOWED_BODY_IMPORTS]
    assert not unexpected, "imports of ferrograd modules in function bodies:\n" + "\n".join(unexpected)
    assert not set(ALLOWED_BODY_IMPORTS) - found, "allowlisted imports that are gone"


def _all_modules():
    for info in pkgutil.walk_packages(ferrograd.__path__, f"{PACKAGE}."):
        yield importlib.import_module(info.name)


def test_no_submodule_hidden_by_a_package_attribute():
    # e.g. a module nn/functional/linear.py next to the function F.linear: the package attribute
    # ``linear`` is the function, and ``import ferrograd.nn.functional.linear`` binds it too
    hidden = []
    for module in _all_modules():
        package, _, name = module.__name__.rpartition(".")
        attribute = getattr(sys.modules[package], name)
        if attribute is not module and module.__name__ not in ALLOWED_HIDDEN_SUBMODULES:
            kind = "module" if isinstance(attribute, types.ModuleType) else type(attribute).__name__
            hidden.append(f"{module.__name__} (hidden by a {kind})")
    assert not hidden, "submodules hidden by package attributes:\n" + "\n".join(hidden)
    for name in ALLOWED_HIDDEN_SUBMODULES:
        package, _, attr = name.rpartition(".")
        assert getattr(sys.modules[package], attr) is not sys.modules[name], f"{name} is no longer hidden"


def test_entry_points_import_in_a_fresh_interpreter():
    # the static graph cannot see the order in which packages initialise: import them for real
    code = textwrap.dedent("""
        import ferrograd.nn.functional as F
        import ferrograd.optim, ferrograd.utils.data
        import ferrograd.utils.checkpoint
        import ferrograd.nn.modules._functions
        assert F.linear.__module__ == "ferrograd.nn.functional._linear"
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PYTHON_DIR.parent)
