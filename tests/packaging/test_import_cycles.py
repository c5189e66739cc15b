"""No import cycles, and the layering docs/OVERVIEW.md states (issue 14).

Every module of ``controlplane/`` (as ``spindle.controlplane``), ``sdk/`` (as ``spindle``),
``widgets/`` (as ``spindle.widgets``) and ``terraform/provider/spindle_tf`` (as ``spindle_tf``)
is parsed with :mod:`ast` (nothing is imported), and every import statement is resolved to
the module it loads: relative imports against the importing module's package, and
``from pkg import name`` to ``pkg.name`` when that is a module, else to ``pkg``.

What counts as an import: every ``import`` and ``from ... import`` statement anywhere in a
module, at module level, inside a function or class, and under ``if TYPE_CHECKING:``.
A cycle through a function-level or ``TYPE_CHECKING`` import does not fail at import
time, but the two modules still depend on each other: neither can be read, tested or
moved without the other, and the day someone hoists the deferred import the cycle breaks
start-up. The cycles issue 14 names (``spindle.dsl._runtime`` <-> ``spindle.dsl._workflow``,
the history package) are of exactly that kind, so they count. Not counted: that importing
``a.b.c`` first runs ``a/__init__`` and ``a/b/__init__`` (a package re-exporting its own
submodules is not a cycle); only the module named is.

Layering (docs/OVERVIEW.md#layout and #rules-of-the-house, issue 14):

- The SDK imports only the wire API ``spindle.api`` and the embedded entry
  point ``spindle.controlplane.embedded`` of the control plane, and the core SDK imports the
  latter only inside a function (``import spindle`` never loads a control plane);
  ``spindle.testing``, the in-process test environment, is built on it and may import it at
  module level.
- Nothing imports ``examples`` or ``tests``.
- ``spindle.widgets`` imports only the public SDK (modules with no ``_``-prefixed part).
- The history engine (``spindle.controlplane.history``) does not import the frontend.
- The command line, ``spindle.cli``, imports of the control plane only its entry points
  ``spindle.controlplane.server``, ``.embedded``, ``.config`` and ``.cluster`` (cluster members
  and their schema), and only inside a function (``spindle workflow ...`` never loads a
  server). Of the SDK it uses the public modules (no ``_``-prefixed part).
- Only command-line modules (``spindle.cli`` and its modules, the console script, the
  ``spindle.cli`` entry-point plugins, ``__main__``) import a command-line module: a lower
  layer never imports the CLI.
- The Terraform provider runs in its own environment, where of Spindle only the generated
  wire stubs exist: it imports ``spindle.api`` and nothing else of ``spindle``.

The allow-lists below hold what is known and being removed on another branch; a listed
entry that no longer occurs fails the test so that it is deleted, and the entries seen are
reported as warnings (shown in pytest's warnings summary).
"""

from __future__ import annotations

import ast
import gc
import subprocess
import sys
import tomllib
import warnings

from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

REPO = Path(__file__).resolve().parents[2]
TREES = {
    "spindle": REPO / "sdk",
    "spindle.widgets": REPO / "widgets",
    "spindle.controlplane": REPO / "controlplane",
    "spindle_tf": REPO / "terraform" / "provider" / "spindle_tf",
}

#: Import cycles tolerated for now: package prefix -> why. A strongly connected component
#: whose modules all lie under one prefix is allowed.
ALLOWED_CYCLES: dict[str, str] = {}

#: Layering violations tolerated for now: (importing package prefix, imported prefix) -> why.
ALLOWED_LAYERING: dict[tuple[str, str], str] = {
    ("spindle.cli", "spindle.client._batch"):
        "the batch commands count the targets, ask for confirmation and show progress between the batch engine's "
        "steps; the public Client.batch_* methods run all the steps in one call",
    ("spindle.cli", "spindle.client._tls"):
        "the TLS flags fall back to the SPINDLE_TLS* variables with errors naming the flag or the variable "
        "(tls_from_files); the public spindle.envconfig reads only the variables",
}

#: The control plane's entry points, which the command line may import (inside a function).
CLI_ENTRY_POINTS = {"spindle.controlplane.server", "spindle.controlplane.embedded", "spindle.controlplane.config",
                    "spindle.controlplane.cluster"}


# ------------------------------------------------------------------------------ the import graph

@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool


@dataclass(frozen=True)
class Import:
    """One import statement's target, where it is, and how it runs."""

    source: str
    target: str
    path: Path
    line: int
    kind: str  # "module level", "in a function" or "under TYPE_CHECKING"

    def where(self) -> str:
        path = self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path
        return f"{path}:{self.line}, {self.kind}"


def discover() -> dict[str, Module]:
    """Every module of the four trees, by its import name."""
    found: dict[str, Module] = {}
    for package, root in TREES.items():
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join([package, *parts])] = Module(".".join([package, *parts]), path, is_package)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement of ``tree`` with how it runs (see the module docstring)."""
    found: list[tuple[ast.Import | ast.ImportFrom, str]] = []

    def visit(node: ast.AST, kind: str) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, kind))
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.body:
                visit(stmt, "under TYPE_CHECKING")
            for stmt in node.orelse:
                visit(stmt, kind)
            return
        if kind == "module level" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            kind = "in a function"
        for child in ast.iter_child_nodes(node):
            visit(child, kind)

    visit(tree, "module level")
    return found


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    parts = package.split(".")
    if node.level - 1 >= len(parts):
        raise AssertionError(f"{module.path}:{node.lineno}: relative import beyond the top-level package")
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` with the garbage collector paused.

    CPython 3.11 tracks the AST builder's recursion depth in global state (gh-106905): a
    finalizer that runs during the parse and parses too (a never-retrieved task exception
    being logged formats a traceback, which parses source lines) makes the outer parse fail
    with ``SystemError: AST constructor recursion depth mismatch``; it did, in one CI run,
    after earlier tests of the same worker left such tasks behind. (The SDK's determinism
    check parses the same way: ``spindle._workflow.determinism_check._gc_paused``.)
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename)
    finally:
        if enabled:
            gc.enable()


def imports_of(module: Module, known: dict[str, Module]) -> list[Import]:
    """What ``module`` imports: internal targets resolved to a known module, others as written."""
    tree = _parse(module.path.read_text(encoding="utf-8"), str(module.path))
    out: list[Import] = []
    for node, kind in _statements(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = _absolute(module, node)
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for name in dict.fromkeys(names):  # once per statement and target
            target = name
            while target and target not in known:  # a name inside a module: the module itself
                target = target.rpartition(".")[0]
            out.append(Import(module.name, target or name, module.path, node.lineno, kind))
    return out


@dataclass
class Graph:
    modules: dict[str, Module]
    imports: list[Import]

    def internal(self) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(self.modules)
        for imp in self.imports:
            if imp.target in self.modules and imp.target != imp.source:
                g.add_edge(imp.source, imp.target)
                g.edges[imp.source, imp.target].setdefault("at", []).append(imp)
        return g


def build() -> Graph:
    modules = discover()
    return Graph(modules, [imp for m in modules.values() for imp in imports_of(m, modules)])


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build()


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def describe_cycle(g: nx.DiGraph, component: set[str]) -> str:
    """The modules of a strongly connected component and one cycle through it, edge by edge."""
    sub = g.subgraph(component)
    cycle = nx.find_cycle(sub)
    lines = [f"  {len(component)} modules: {', '.join(sorted(component))}", "  for example:"]
    for a, b in cycle:
        at = sub.edges[a, b]["at"]
        lines.append(f"    {a} -> {b}  ({'; '.join(i.where() for i in at)})")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the resolver itself

def test_the_walk_finds_every_tree_and_resolves_relative_and_submodule_imports(graph: Graph) -> None:
    # Guard against a walk that silently finds nothing (a moved folder, a broken resolver).
    for package in TREES:
        assert package in graph.modules, package
    assert len(graph.modules) > 150 and len(graph.imports) > 1000, (len(graph.modules), len(graph.imports))
    edges = {(i.source, i.target, i.kind) for i in graph.imports}
    # ``from .x import y`` in a package __init__ resolves against the package itself
    assert ("spindle.controlplane.cluster", "spindle.controlplane.cluster._config", "module level") in edges
    # ``from spindle import workflow``: a submodule, not the package
    assert ("spindle.dsl._runtime", "spindle.workflow", "module level") in edges
    # a deferred import and an external one
    assert ("spindle.client._connection", "spindle.controlplane.embedded", "in a function") in edges
    assert any(i.source == "spindle.client._client" and i.target == "grpc" for i in graph.imports)


def test_each_import_is_classified_by_how_it_runs() -> None:
    source = ("import a\nif TYPE_CHECKING:\n    import b\nelse:\n    import c\ndef f():\n    import d\n"
              "class K:\n    import e\n    def m(self):\n        if typing.TYPE_CHECKING:\n            import g\n")
    kinds = {node.names[0].name: kind for node, kind in _statements(_parse(source))}
    assert kinds == {"a": "module level", "b": "under TYPE_CHECKING", "c": "module level", "d": "in a function",
                     "e": "module level", "g": "under TYPE_CHECKING"}


def test_a_cycle_through_deferred_or_type_only_imports_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    (pkg / "b.py").write_text("def f():\n    from pkg import a\n")
    known = {n: Module(n, pkg / f"{n.split('.')[-1]}.py", False) for n in ("pkg.a", "pkg.b")}
    known["pkg"] = Module("pkg", pkg / "__init__.py", True)
    g = Graph(known, [i for m in known.values() for i in imports_of(m, known)]).internal()
    assert [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1] == [["pkg.a", "pkg.b"]]
    assert "under TYPE_CHECKING" in describe_cycle(g, {"pkg.a", "pkg.b"})


# ------------------------------------------------------------------------------ cycles

def test_no_import_cycles(graph: Graph) -> None:
    g = graph.internal()
    components = [c for c in nx.strongly_connected_components(g) if len(c) > 1]
    bad, allowed_seen = [], set()
    for component in sorted(components, key=sorted):
        prefix = next((p for p in ALLOWED_CYCLES if all(_under(m, p) for m in component)), None)
        if prefix is None:
            bad.append(describe_cycle(g, component))
            continue
        allowed_seen.add(prefix)
        warnings.warn(f"allowed import cycle seen (ALLOWED_CYCLES[{prefix!r}]: {ALLOWED_CYCLES[prefix]}):\n"
                      f"{describe_cycle(g, component)}", stacklevel=1)
    stale = sorted(set(ALLOWED_CYCLES) - allowed_seen)
    assert not bad, "import cycles:\n" + "\n".join(bad)
    assert not stale, f"ALLOWED_CYCLES entries with no cycle any more (delete them): {stale}"


# ------------------------------------------------------------------------------ layering

def _cli_modules(known: dict[str, Module]) -> set[str]:
    """spindle.cli and its modules, the console script, the ``spindle.cli`` plugins and every ``__main__``."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    targets = [*project["scripts"].values(), *project.get("entry-points", {}).get("spindle.cli", {}).values()]
    found = {t.partition(":")[0] for t in targets} | {n for n in known if _under(n, "spindle.cli")}
    found |= {n for n in known if n.rpartition(".")[2] == "__main__"}
    missing = found - set(known)
    assert not missing, f"pyproject names modules that do not exist: {sorted(missing)}"
    return found


def _is_public_sdk(name: str) -> bool:
    return (_under(name, "spindle") and not _under(name, "spindle.controlplane")
            and not any(part.startswith("_") for part in name.split(".")))


def layering_violations(graph: Graph) -> list[tuple[Import, str]]:
    """Each import that breaks a rule of the module docstring, with the rule."""
    cli = _cli_modules(graph.modules)
    found: list[tuple[Import, str]] = []
    for imp in graph.imports:
        src, dst = imp.source, imp.target
        command_line = _under(src, "spindle.cli")
        sdk = _under(src, "spindle") and not _under(src, "spindle.widgets") and not _under(src, "spindle.controlplane") \
            and not command_line
        if command_line and _under(dst, "spindle.controlplane"):
            if imp.kind == "module level":
                found.append((imp, "the CLI imports the control plane only inside the command that runs it"))
            elif dst not in CLI_ENTRY_POINTS:
                found.append((imp, "the CLI imports of the control plane only its entry points (server, embedded, "
                                   "config, cluster)"))
        if command_line and _under(dst, "spindle") and not _under(dst, "spindle.cli") \
                and not _under(dst, "spindle.controlplane") and not _is_public_sdk(dst):
            found.append((imp, "the CLI uses the public SDK"))
        if sdk and _under(dst, "spindle.controlplane") and not _under(dst, "spindle.api"):
            if dst != "spindle.controlplane.embedded":
                found.append((imp, "the SDK imports only spindle.api and .embedded of the control plane"))
            elif imp.kind == "module level" and not _under(src, "spindle.testing"):
                found.append((imp, "the core SDK imports spindle.controlplane.embedded only inside a function"))
        if dst.split(".")[0] in ("examples", "tests"):
            found.append((imp, "nothing imports examples or tests"))
        if _under(src, "spindle.widgets") and _under(dst, "spindle") and not _under(dst, "spindle.widgets") \
                and not _is_public_sdk(dst):
            found.append((imp, "spindle.widgets imports only the public SDK"))
        if _under(src, "spindle.controlplane.history") and _under(dst, "spindle.controlplane.frontend"):
            found.append((imp, "the history engine does not import the frontend"))
        if dst in cli and src not in cli:
            found.append((imp, "only command-line modules import a command-line module"))
        if _under(src, "spindle_tf") and _under(dst, "spindle") and not _under(dst, "spindle.api"):
            found.append((imp, "the Terraform provider imports only spindle.api of spindle"))
        if dst == "spindle" and src != "spindle":
            found.append((imp, "nothing of Spindle takes a name from the top-level package (import it from "
                               "the module that defines it; `spindle` re-exports for users only)"))
    return found


def test_layering(graph: Graph) -> None:
    bad, allowed_seen = [], set()
    for imp, rule in layering_violations(graph):
        key = next((k for k in ALLOWED_LAYERING if _under(imp.source, k[0]) and _under(imp.target, k[1])), None)
        line = f"  {imp.source} -> {imp.target} ({imp.where()}): {rule}"
        if key is None:
            bad.append(line)
        else:
            allowed_seen.add(key)
            warnings.warn(f"allowed layering exception seen (ALLOWED_LAYERING[{key!r}]: {ALLOWED_LAYERING[key]}):\n"
                          f"{line}", stacklevel=1)
    stale = sorted(set(ALLOWED_LAYERING) - allowed_seen)
    assert not bad, "layering violations:\n" + "\n".join(bad)
    assert not stale, f"ALLOWED_LAYERING entries no longer needed (delete them): {stale}"


def test_layering_rules_catch_what_they_name() -> None:
    """Each rule fires on a made-up import that breaks it (so a typo cannot disable one)."""
    known = discover()

    def rules(source: str, target: str, kind: str = "module level") -> set[str]:
        imp = Import(source, target, REPO / "pyproject.toml", 1, kind)
        return {rule for _, rule in layering_violations(Graph(known, [imp]))}

    assert rules("spindle.client._client", "spindle.controlplane.history")
    assert rules("spindle.client._client", "spindle.controlplane.embedded")
    assert not rules("spindle.client._client", "spindle.controlplane.embedded", "in a function")
    assert not rules("spindle.testing._environment", "spindle.controlplane.embedded")
    assert not rules("spindle.client._client", "spindle.api.service_pb2")
    assert rules("spindle.dsl", "tests")
    assert rules("spindle.widgets._live", "spindle.client._client")
    assert not rules("spindle.widgets._live", "spindle.client")
    assert rules("spindle.controlplane.history.engine", "spindle.controlplane.frontend")
    assert rules("spindle.controlplane.cluster._node", "spindle.cli")
    assert rules("spindle.client._client", "spindle.cli._output", "in a function")
    assert not rules("spindle.cli.admin", "spindle.cli._output")
    assert rules("spindle.cli.server", "spindle.controlplane.server")  # at module level: every command would load it
    assert not rules("spindle.cli.server", "spindle.controlplane.server", "in a function")
    assert rules("spindle.cli.workflow", "spindle.controlplane.history", "in a function")
    assert not rules("spindle.cli.admin", "spindle.controlplane.cluster", "in a function")
    assert rules("spindle.cli.admin", "spindle.controlplane.store._spanner_schema", "in a function")
    assert rules("spindle.cli.workflow", "spindle.client._client")
    assert not rules("spindle.cli.workflow", "spindle.client")
    assert rules("spindle_tf.client", "spindle.controlplane.errors")
    assert rules("spindle.dsl._runtime", "spindle")
    assert not rules("spindle.dsl._runtime", "spindle.workflow")


def _loaded_after(code: str) -> list[str]:
    """The ``spindle`` modules a fresh interpreter has loaded after running ``code``."""
    probe = f"{code}\nimport sys\nprint(sorted(m for m in sys.modules if m == 'spindle' or m.startswith('spindle.')))\n"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return ast.literal_eval(proc.stdout)  # a list literal printed by the probe


@pytest.mark.parametrize("entry", ["spindle.controlplane.server", "spindle.controlplane.embedded",
                                   "spindle.controlplane.config"])
def test_importing_the_server_loads_no_client_worker_or_workflow_runtime(entry: str) -> None:
    """The control plane's entry points load, of the SDK, only the wire API ``spindle.api``."""
    loaded = _loaded_after(f"import {entry}")
    sdk = [m for m in loaded if m != "spindle" and not _under(m, "spindle.controlplane") and not _under(m, "spindle.api")]
    assert entry in loaded and not sdk, f"importing {entry} loaded SDK modules: {sdk}"


def test_importing_spindle_loads_nothing_else() -> None:
    assert _loaded_after("import spindle") == ["spindle"]


def test_importing_the_sdk_loads_no_control_plane() -> None:
    """``import spindle`` (and its public modules) never loads the control plane, only its wire API."""
    code = ("import sys, spindle, spindle.client, spindle.worker, spindle.workflow, spindle.activity, spindle.dsl\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('spindle.controlplane')\n"
            "                and not m.startswith('spindle.api'))\n"
            "print(loaded)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() in ("[]", "['spindle.controlplane']"), proc.stdout


def test_top_level_names_are_the_ones_spelled_out_for_type_checkers() -> None:
    """``spindle``'s lazily read names and its ``TYPE_CHECKING`` imports are the same table, and each
    name is the object its public module defines."""
    import importlib

    import spindle

    tree = _parse((REPO / "sdk" / "__init__.py").read_text(encoding="utf-8"))
    typed = {alias.name: node.module for node, kind in _statements(tree) if kind == "under TYPE_CHECKING"
             and isinstance(node, ast.ImportFrom) for alias in node.names}
    assert typed == spindle._PUBLIC_NAMES
    assert spindle.__all__ == ["__version__", *spindle._PUBLIC_NAMES]
    for name, module in spindle._PUBLIC_NAMES.items():
        assert getattr(spindle, name) is getattr(importlib.import_module(module), name), name
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        spindle.Nope  # noqa: B018
