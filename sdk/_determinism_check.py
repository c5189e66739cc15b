"""Static determinism check of a workflow's source (like sdk-go's ``workflowcheck``).

``check_workflow(defn)`` parses the module that defines the workflow, resolves its
imports, and walks the workflow class (or function) for calls that differ between
runs: wall-clock time, randomness, environment, files, network, threads and blocking
sleeps. Each :class:`Finding` names ``file:line`` and the deterministic alternative.
Only the workflow's own source is checked, not the helpers it calls.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap

from typing import Any

from spindle._workflow_defn import WorkflowDefinition

__all__ = ["Finding", "check_workflow", "check_source"]

_TIME = "workflow.now() (workflow time)"
# Fully qualified callable or attribute -> deterministic alternative.
_EXACT: dict[str, str] = {
    "time.time": _TIME, "time.time_ns": _TIME, "time.monotonic": _TIME, "time.monotonic_ns": _TIME,
    "time.perf_counter": _TIME, "time.perf_counter_ns": _TIME, "time.localtime": _TIME, "time.gmtime": _TIME,
    "time.sleep": "await workflow.sleep(...) (a durable timer)",
    "datetime.datetime.now": _TIME, "datetime.datetime.utcnow": _TIME, "datetime.datetime.today": _TIME,
    "datetime.date.today": _TIME,
    "uuid.uuid1": "workflow.uuid4()", "uuid.uuid4": "workflow.uuid4()",
    "os.environ": "pass configuration as a workflow argument, or read it in an activity",
    "os.getenv": "pass configuration as a workflow argument, or read it in an activity",
    "os.urandom": "workflow.random()",
    "open": "read or write files in an activity",
    "io.open": "read or write files in an activity",
    "builtins.open": "read or write files in an activity",
    "input": "receive data with a signal or an update",
}
# Any use of these modules (or their submodules) -> alternative.
_MODULES: dict[str, str] = {
    "random": "workflow.random() (seeded per run)",
    "secrets": "workflow.random()",
    "socket": "do network I/O in an activity",
    "requests": "do network I/O in an activity",
    "httpx": "do network I/O in an activity",
    "aiohttp": "do network I/O in an activity",
    "urllib": "do network I/O in an activity",
    "http": "do network I/O in an activity",
    "threading": "use asyncio tasks (asyncio.gather / workflow handles) instead of threads",
    "concurrent": "use asyncio tasks; run blocking work in an activity",
    "multiprocessing": "run the work in an activity",
    "subprocess": "run the command in an activity",
    "shutil": "touch files in an activity",
    "pathlib": "touch files in an activity",
}
# Method names that mean file I/O whatever the receiver.
_FILE_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes"}


@dataclasses.dataclass(frozen=True)
class Finding:
    """One non-deterministic call in workflow code."""

    file: str
    line: int
    column: int
    call: str
    alternative: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.call} is not deterministic in workflow code; instead: {self.alternative}"


class _Imports(ast.NodeVisitor):
    """Local name -> fully qualified name, from a module's imports."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.asname:
                self.names[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                self.names[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return
        for a in node.names:
            self.names[a.asname or a.name] = f"{node.module}.{a.name}"


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _classify(qualified: str) -> str | None:
    if qualified in _EXACT:
        return _EXACT[qualified]
    top = qualified.split(".")[0]
    return _MODULES.get(top)


class _Checker(ast.NodeVisitor):
    def __init__(self, filename: str, imports: dict[str, str], line_offset: int) -> None:
        self.filename = filename
        self.imports = imports
        self.offset = line_offset
        self.findings: list[Finding] = []
        self._seen: set[tuple[int, int]] = set()

    def _qualify(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        if head in self.imports:
            base = self.imports[head]
            return f"{base}.{rest}" if rest else base
        return dotted

    def _report(self, node: ast.AST, shown: str, alternative: str) -> None:
        key = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(self.filename, node.lineno + self.offset, node.col_offset,  # type: ignore[attr-defined]
                                     shown, alternative))

    def visit_Call(self, node: ast.Call) -> None:
        dotted = _dotted(node.func)
        if dotted is not None:
            head = dotted.split(".")[0]
            if dotted in ("open", "input") and dotted not in self.imports:
                self._report(node, f"{dotted}()", _EXACT[dotted])
            elif head in self.imports:
                q = self._qualify(dotted)
                alt = _classify(q)
                if alt is not None:
                    self._report(node, f"{q}()", alt)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _FILE_METHODS:
            self._report(node, f".{node.func.attr}()", "read or write files in an activity")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = _dotted(node)
        if dotted is not None and dotted.split(".")[0] in self.imports:
            q = self._qualify(dotted)
            if q == "os.environ" or q.startswith("os.environ."):
                self._report(node, "os.environ", _EXACT["os.environ"])
                return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if self.imports.get(node.id) == "os.environ":
            self._report(node, "os.environ", _EXACT["os.environ"])


def check_source(source: str, *, filename: str = "<workflow>", module_source: str | None = None,
                 line_offset: int = 0) -> list[Finding]:
    """Check a snippet of workflow source; imports are resolved from ``module_source`` (or the snippet)."""
    imports = _Imports()
    imports.visit(ast.parse(module_source if module_source is not None else source))
    tree = ast.parse(textwrap.dedent(source))
    imports.visit(tree)
    checker = _Checker(filename, imports.names, line_offset)
    checker.visit(tree)
    return sorted(checker.findings, key=lambda f: (f.line, f.column))


def check_workflow(defn: Any) -> list[Finding]:
    """Check a workflow (definition, decorated class or function) for non-deterministic calls.

    Returns an empty list when the source is not available (e.g. defined in a REPL).

    Raises:
        TypeError: ``defn`` is not a workflow.
    """
    d = WorkflowDefinition.from_target(defn)
    target = d.cls if d.cls is not None else d.run.fn
    try:
        lines, start = inspect.getsourcelines(target)
        filename = inspect.getsourcefile(target) or "<unknown>"
        module = inspect.getmodule(target)
        module_source = inspect.getsource(module) if module is not None else None
    except (OSError, TypeError):
        return []
    return check_source("".join(lines), filename=filename, module_source=module_source, line_offset=start - 1)
