"""Static determinism check of a workflow's source (like sdk-go's ``workflowcheck``).

``check_workflow(defn)`` parses the module that defines the workflow, resolves its
imports, and walks the code the workflow runs for calls that differ between runs:
wall-clock time, randomness, environment, files, network, threads and blocking
sleeps. Each :class:`Finding` names ``file:line`` and the deterministic alternative.

What is checked: a function-style workflow's body; for a class, the methods the
workflow can run (``__init__``, the run method, signal, query and update handlers,
validators) and every method of the class they reach through ``self.<name>`` or
``ClassName.<name>``. Other methods (a ``@staticmethod`` the starter calls to build
the input, say) never run in the workflow and are not checked. Helpers outside the
class are not checked either.

What is not flagged, because it is deterministic or recorded:

- the function given to ``workflow.side_effect`` (a lambda, a ``functools.partial``, a
  local function used only there, or ``self.<method>`` used only there): its value is
  recorded, so non-determinism is its purpose;
- the body of ``with workflow.unsafe.sandbox_unrestricted():`` (an explicit opt-out);
- the pure parts of I/O modules: ``urllib.parse``, ``http.HTTPStatus``,
  ``pathlib.PurePosixPath`` and path arithmetic; only the calls that do I/O are flagged
  (``urllib.request``, ``http.client``, ``Path.read_text()``, ``Path.cwd()``, ...);
- time conversions given a timestamp: ``time.gmtime(workflow.now().timestamp())`` is pure,
  ``time.gmtime()`` reads the clock (``time.localtime(secs)`` is flagged for another
  reason: its result depends on the worker's time zone).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import gc
import inspect
import textwrap

from collections.abc import Iterable, Iterator
from typing import Any

from spindle._workflow.defn import WorkflowDefinition

__all__ = ["Finding", "check_workflow", "check_source"]

_TIME = "workflow.now() (workflow time)"
_FILES = "read or write files in an activity"
_CONFIG = "pass configuration as a workflow argument, or read it in an activity"
_LOCAL_TZ = "time.gmtime(secs) (UTC), or workflow.now().astimezone(<a fixed ZoneInfo>)"
# Fully qualified callable or attribute -> deterministic alternative.
_EXACT: dict[str, str] = {
    "time.time": _TIME, "time.time_ns": _TIME, "time.monotonic": _TIME, "time.monotonic_ns": _TIME,
    "time.perf_counter": _TIME, "time.perf_counter_ns": _TIME,
    "time.sleep": "await workflow.sleep(...) (a durable timer)",
    "datetime.datetime.now": _TIME, "datetime.datetime.utcnow": _TIME, "datetime.datetime.today": _TIME,
    "datetime.date.today": _TIME,
    "uuid.uuid1": "workflow.uuid4()", "uuid.uuid4": "workflow.uuid4()",
    "os.environ": _CONFIG,
    "os.getenv": _CONFIG,
    "os.urandom": "workflow.random()",
    "os.getcwd": _CONFIG, "os.getpid": "workflow.info() (workflow id and run id)",
    "os.cpu_count": _CONFIG, "os.system": "run the command in an activity", "os.popen": "run the command in an activity",
    "os.listdir": _FILES, "os.scandir": _FILES, "os.walk": _FILES, "os.stat": _FILES, "os.remove": _FILES,
    "os.unlink": _FILES, "os.mkdir": _FILES, "os.makedirs": _FILES, "os.rename": _FILES, "os.replace": _FILES,
    "os.rmdir": _FILES, "os.path.exists": _FILES, "os.path.isfile": _FILES, "os.path.isdir": _FILES,
    "os.path.getsize": _FILES, "os.path.getmtime": _FILES,
    "open": _FILES,
    "io.open": _FILES,
    "builtins.open": _FILES,
    "input": "receive data with a signal or an update",
}
# Clock readers that are pure when given the time to convert: name -> index of that argument.
_CLOCK_UNLESS_GIVEN: dict[str, int] = {
    "time.gmtime": 0, "time.localtime": 0, "time.ctime": 0, "time.asctime": 0, "time.strftime": 1,
}
# Given a time, these still depend on the worker's time zone.
_LOCAL_TIME_ZONE = {"time.localtime", "time.ctime"}
# Any use of these modules or submodules (dotted prefixes) -> alternative.
_MODULES: dict[str, str] = {
    "random": "workflow.random() (seeded per run)",
    "secrets": "workflow.random()",
    "socket": "do network I/O in an activity",
    "requests": "do network I/O in an activity",
    "httpx": "do network I/O in an activity",
    "aiohttp": "do network I/O in an activity",
    "urllib.request": "do network I/O in an activity",
    "urllib.robotparser": "do network I/O in an activity",
    "http.client": "do network I/O in an activity",
    "http.server": "do network I/O in an activity",
    "threading": "use asyncio tasks (asyncio.gather / workflow handles) instead of threads",
    "concurrent": "use asyncio tasks; run blocking work in an activity",
    "multiprocessing": "run the work in an activity",
    "subprocess": "run the command in an activity",
    "shutil": "touch files in an activity",
}
# Method names that mean file I/O whatever the receiver.
_FILE_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes"}
# Concrete path classes (``PurePath`` and friends never touch the file system).
_PATH_CLASSES = {"pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath"}
# Path methods that touch the file system or read process state (cwd, home directory).
_PATH_IO = {
    "open", "exists", "is_file", "is_dir", "is_symlink", "is_mount", "is_socket", "is_fifo", "is_block_device",
    "is_char_device", "is_junction", "iterdir", "glob", "rglob", "walk", "stat", "lstat", "owner", "group", "chmod",
    "lchmod", "mkdir", "rmdir", "unlink", "touch", "rename", "replace", "resolve", "absolute", "samefile",
    "readlink", "symlink_to", "hardlink_to", "link_to", "expanduser", "cwd", "home",
} | _FILE_METHODS
# Path methods and attributes that give another path (so the result is a path too).
_PATH_DERIVED = {"parent", "joinpath", "with_name", "with_suffix", "with_stem", "relative_to", "with_segments"}
# The modules ``spindle.workflow`` re-exports its calls from (code may import them from there).
_API_MODULES = ("spindle._workflow.info_calls", "spindle._workflow.wait_calls", "spindle._workflow.activity_calls",
                "spindle._workflow.child_calls", "spindle._workflow.history_calls", "spindle._workflow.unsafe")


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


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the garbage collector while source is parsed.

    CPython 3.11 tracks the AST builder's recursion depth in global state (gh-106905): a
    finalizer that runs during a parse and parses too (logging a never-retrieved
    exception formats a traceback, which parses source lines to place its carets) makes
    the outer parse fail with ``SystemError: AST constructor recursion depth mismatch``.
    ``inspect.getsource`` parses as well, so the whole source gathering runs paused.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse(source: str, mode: str = "exec") -> Any:
    with _gc_paused():
        return ast.parse(source, mode=mode)


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _module_alternative(qualified: str) -> str | None:
    for prefix, alternative in _MODULES.items():
        if qualified == prefix or qualified.startswith(prefix + "."):
            return alternative
    return None


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


class _Checker(ast.NodeVisitor):
    """Collects findings in the nodes it visits, and the ``self.<name>`` references it meets."""

    def __init__(self, filename: str, imports: dict[str, str], line_offset: int,
                 owner_names: Iterable[str] = ()) -> None:
        self.filename = filename
        self.imports = imports
        self.offset = line_offset
        self.findings: list[Finding] = []
        self._seen: set[tuple[int, int]] = set()
        self.owner_names = set(owner_names)  # names that mean "the workflow class or instance"
        self.referenced: set[str] = set()  # attributes read on those names
        self._path_names: set[str] = set()
        self._skip_defs: set[str] = set()

    # ------------------------------------------------------------ names

    def _qualify(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        if head in self.imports:
            base = self.imports[head]
            return f"{base}.{rest}" if rest else base
        return dotted

    def _qualified_call(self, node: ast.Call) -> str | None:
        dotted = _dotted(node.func)
        return None if dotted is None else self._qualify(dotted)

    def _is_api(self, node: ast.AST, suffix: str) -> bool:
        """Whether ``node`` calls Spindle's ``workflow.<suffix>`` (however it was imported)."""
        if not isinstance(node, ast.Call):
            return False
        q = self._qualified_call(node)
        return q is not None and (q == f"workflow.{suffix}" or q.endswith(f".workflow.{suffix}")
                                  or any(q == f"{module}.{suffix}" for module in _API_MODULES))

    def _is_path(self, node: ast.AST) -> bool:
        """Whether ``node`` evidently evaluates to a concrete ``pathlib.Path``."""
        if isinstance(node, ast.Call):
            q = self._qualified_call(node)
            if q in _PATH_CLASSES:
                return True
            if isinstance(node.func, ast.Attribute) and node.func.attr in _PATH_DERIVED:
                return self._is_path(node.func.value)
            return False
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self._is_path(node.left)
        if isinstance(node, ast.Attribute) and node.attr in _PATH_DERIVED:
            return self._is_path(node.value)
        if isinstance(node, ast.Name):
            return node.id in self._path_names
        return False

    def _annotation_is_path(self, annotation: ast.AST | None) -> bool:
        if annotation is None:
            return False
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = _parse(annotation.value, mode="eval").body
            except SyntaxError:
                return False
        dotted = _dotted(annotation)
        return dotted is not None and self._qualify(dotted) in _PATH_CLASSES

    # ------------------------------------------------------------ roots

    def check_function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, *, owner_param: bool) -> None:
        """Check a function's body (not its decorators or defaults: those run at import)."""
        args = fn.args
        saved_paths = set(self._path_names)
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        for p in params:
            if self._annotation_is_path(p.annotation):
                self._path_names.add(p.arg)
        positional = [*args.posonlyargs, *args.args]
        added_owner = None
        if owner_param and positional and positional[0].arg not in self.owner_names:
            added_owner = positional[0].arg
            self.owner_names.add(added_owner)
        saved_skip = self._skip_defs
        self._skip_defs = saved_skip | _side_effect_only_defs(fn.body, self)
        for stmt in fn.body:
            self.visit(stmt)
        self._skip_defs = saved_skip
        self._path_names = saved_paths
        if added_owner is not None:
            self.owner_names.discard(added_owner)

    # ------------------------------------------------------------ findings

    def _report(self, node: ast.AST, shown: str, alternative: str) -> None:
        key = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(self.filename, node.lineno + self.offset, node.col_offset,  # type: ignore[attr-defined]
                                     shown, alternative))

    # ------------------------------------------------------------ visitors

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._visit_nested_def(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._visit_nested_def(node)

    def _visit_nested_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in self._skip_defs:
            return  # used only as a side effect's function: its result is recorded
        for d in node.decorator_list:
            self.visit(d)
        self.visit(node.args)
        self.check_function(node, owner_param=False)

    def visit_Assign(self, node: ast.Assign) -> None:
        if self._is_path(node.value):
            self._path_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name) and (
                self._annotation_is_path(node.annotation) or (node.value is not None and self._is_path(node.value))):
            self._path_names.add(node.target.id)
        self.generic_visit(node)

    def visit_With(self, node: ast.With) -> None:
        if any(self._is_api(item.context_expr, "unsafe.sandbox_unrestricted") for item in node.items):
            for item in node.items:
                self.visit(item)
            return  # an explicit opt-out of the determinism guards
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if self._is_api(node, "side_effect"):
            self.visit(node.func)
            for i, a in enumerate(node.args):
                if i:
                    self.visit(a)
            for kw in node.keywords:
                if kw.arg != "fn":
                    self.visit(kw.value)
            return  # the function's value is recorded: it may be as non-deterministic as it likes
        dotted = _dotted(node.func)
        if dotted is not None:
            head = dotted.split(".")[0]
            if dotted in ("open", "input") and dotted not in self.imports:
                self._report(node, f"{dotted}()", _EXACT[dotted])
            elif head in self.imports:
                self._check_qualified_call(node, self._qualify(dotted))
        if isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr in _FILE_METHODS:
                self._report(node, f".{attr}()", _FILES)
            elif attr in _PATH_IO and self._is_path(node.func.value):
                self._report(node, f"Path.{attr}()", _FILES)
        self.generic_visit(node)

    def _check_qualified_call(self, node: ast.Call, q: str) -> None:
        if q in _CLOCK_UNLESS_GIVEN:
            i = _CLOCK_UNLESS_GIVEN[q]
            given = len(node.args) > i and not _is_none(node.args[i]) or any(
                isinstance(a, ast.Starred) for a in node.args)
            if not given:
                self._report(node, f"{q}()", _TIME)
            elif q in _LOCAL_TIME_ZONE:
                self._report(node, f"{q}(secs) (the worker's local time zone)", _LOCAL_TZ)
            return
        owner, _, method = q.rpartition(".")
        if owner in _PATH_CLASSES and method in _PATH_IO:
            self._report(node, f"{q}()", _FILES)
            return
        alt = _EXACT.get(q) or _module_alternative(q)
        if alt is not None:
            self._report(node, f"{q}()", alt)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and node.value.id in self.owner_names:
            self.referenced.add(node.attr)
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


def _side_effect_only_defs(body: list[ast.stmt], checker: _Checker) -> set[str]:
    """Local functions of ``body`` whose name is only ever passed to ``workflow.side_effect``."""
    local_defs = {s.name for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if not local_defs:
        return set()
    as_side_effect: dict[int, str] = {}  # id of the Name node passed as the function -> name
    nodes = [node for stmt in body for node in ast.walk(stmt)]
    for node in nodes:
        if isinstance(node, ast.Call) and checker._is_api(node, "side_effect"):
            fn = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "fn"), None)
            if isinstance(fn, ast.Name):
                as_side_effect[id(fn)] = fn.id
    elsewhere = {node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                 and node.id in local_defs and id(node) not in as_side_effect}
    return (set(as_side_effect.values()) & local_defs) - elsewhere


def _imports_of(source: str, module_source: str | None) -> dict[str, str]:
    imports = _Imports()
    imports.visit(_parse(module_source if module_source is not None else source))
    return imports.names


def check_source(source: str, *, filename: str = "<workflow>", module_source: str | None = None,
                 line_offset: int = 0) -> list[Finding]:
    """Check every function in a snippet of workflow source.

    Imports are resolved from ``module_source`` (or the snippet). Unlike
    :func:`check_workflow`, nothing is left out for being unreachable.
    """
    tree = _parse(textwrap.dedent(source))
    imports = _imports_of(source, module_source)
    extra = _Imports()
    extra.visit(tree)
    imports.update(extra.names)
    checker = _Checker(filename, imports, line_offset)
    checker.visit(tree)
    return sorted(checker.findings, key=lambda f: (f.line, f.column))


def _entry_names(d: WorkflowDefinition) -> set[str]:
    """Names of the class's methods the runtime calls: __init__, run, handlers and validators."""
    fns: list[Any] = [d.run.fn]
    fns += [s.handler.fn for s in d.signals.values()]
    fns += [q.handler.fn for q in d.queries.values()]
    for u in d.updates.values():
        fns.append(u.handler.fn)
        if u.validator is not None:
            fns.append(u.validator.fn)
    return {"__init__"} | {getattr(inspect.unwrap(f), "__name__", "") for f in fns}


def _check_class(tree: ast.Module, d: WorkflowDefinition, checker: _Checker) -> None:
    cls_node = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    if cls_node is None:
        return
    methods: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for stmt in cls_node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            methods.setdefault(stmt.name, []).append(stmt)
    checker.owner_names.add(cls_node.name)
    todo = [name for name in _entry_names(d) if name in methods]
    done: set[str] = set()
    while todo:
        name = todo.pop()
        if name in done:
            continue
        done.add(name)
        for fn in methods[name]:
            static = any(_dotted(dec) == "staticmethod" for dec in fn.decorator_list)
            checker.check_function(fn, owner_param=not static)
        todo += sorted(n for n in checker.referenced if n in methods and n not in done)


def check_workflow(defn: Any) -> list[Finding]:
    """Check the code a workflow runs (definition, decorated class or function) for non-deterministic calls.

    See the module docs for what is checked. Returns an empty list when the source is
    not available (e.g. defined in a REPL).

    Raises:
        TypeError: ``defn`` is not a workflow.
    """
    d = WorkflowDefinition.from_target(defn)
    target = d.cls if d.cls is not None else d.run.fn
    try:
        with _gc_paused():
            lines, start = inspect.getsourcelines(target)
            filename = inspect.getsourcefile(target) or "<unknown>"
            module = inspect.getmodule(target)
            module_source = inspect.getsource(module) if module is not None else None
    except (OSError, TypeError):
        return []
    source = "".join(lines)
    tree = _parse(textwrap.dedent(source))
    imports = _imports_of(source, module_source)
    extra = _Imports()
    extra.visit(tree)
    imports.update(extra.names)
    checker = _Checker(filename, imports, start - 1)
    if d.cls is not None:
        _check_class(tree, d, checker)
    else:
        fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if fn is not None:
            checker.check_function(fn, owner_param=False)
    return sorted(checker.findings, key=lambda f: (f.line, f.column))
