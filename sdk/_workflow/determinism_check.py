"""Static determinism check of a workflow's source (like sdk-go's ``workflowcheck``).

``check_workflow(defn)`` parses the module that defines the workflow, resolves its
imports, and walks the code the workflow runs for calls that differ between runs or
between workers. Each :class:`Finding` names ``file:line`` and the deterministic alternative.

A replay test runs on a machine like the one that recorded the history, so the hazards
that depend on the worker's world pass it and break later on another worker; the check
flags them too. What is flagged:

- the clock: ``time.time``/``time_ns``, ``time.monotonic``/``perf_counter`` (and ``_ns``),
  ``datetime.now``/``utcnow``/``today``, ``time.gmtime()``/``strftime(fmt)`` with no time given,
  ``time.sleep``; also uncalled references (``clock = time.monotonic``) and
  ``getattr(time, "time")`` (``getattr`` on ``time``, ``uuid``, ``random``, ``secrets``,
  ``os``, ``datetime``: a computed name is flagged too);
- randomness: the ``random`` and ``secrets`` modules, ``uuid.uuid1``/``uuid4``, ``os.urandom``,
  ``hash()`` (randomized per process for ``str``), ``random.Random()`` unseeded or seeded
  from the clock (or ``id()``); ``random.Random(seed)`` seeded from the workflow's input, a
  constant or ``workflow.random()`` is accepted;
- the local time zone: ``time.localtime(secs)``, ``time.ctime(secs)``, ``time.mktime``,
  ``datetime.fromtimestamp(ts)`` without ``tz``, ``date.fromtimestamp``, ``.astimezone()``
  with no argument, ``time.timezone``/``altzone``/``tzname``/``daylight``, ``tzlocal``;
- the environment and configuration: ``os.environ`` (every form: subscript, ``.get``,
  ``from os import environ``, an aliased ``os``), ``os.getenv``, ``sys.argv``, ``platform``,
  ``getpass``, ``locale``, ``dotenv``, the process (``os.getpid``, ``os.getcwd``, ...);
  files: ``open``, ``Path.read_text()`` and the path methods that do I/O, ``os``'s file
  calls, ``json.load``/``tomllib.load``/``pickle.load`` (of a file), a ``configparser``
  parser's ``read``/``read_file``;
- the log level: ``logger.isEnabledFor(...)``, ``logger.getEffectiveLevel()``, ``.level`` of a
  logger (``logging.getLogger(...)``, ``logging.root``, a name bound to one);
- a set's order: iterating a set or frozenset that is not evidently of numbers (``for``,
  comprehensions, ``list()``/``tuple()``/``enumerate()``/..., ``*s``, ``", ".join(s)``,
  ``s.pop()``): string hashing is randomized per process. ``sorted(s)``, ``x in s``,
  ``len``/``any``/``all``/``min``/``max``/``sum`` are not flagged;
- network, threads, subprocesses (``socket``, ``requests``, ``threading``, ...);
- values computed at import that the workflow reads: a module-level (or imported from a
  user module) name bound to any of the above (``_START = time.time()``,
  ``REGION = os.getenv("R")``, ``CONFIG.read("app.ini")``, ``clock = functools.partial(time.time)``),
  any module-level ``random.Random`` instance (its state is shared by every run on the
  worker), and class attributes of the workflow computed so (``started = time.time()``),
  flagged where the workflow uses them.

What is checked: a function-style workflow's body; for a class, the methods the
workflow can run (``__init__``, the run method, signal, query and update handlers,
validators) and every method of the class they reach through ``self.<name>`` or
``ClassName.<name>``. Other methods (a ``@staticmethod`` the starter calls to build
the input, say) never run in the workflow and are not checked. Helpers outside the class
are followed one level deep: a function of the workflow's module, or of a user module it
imported (not the standard library, an installed package or Spindle), that the checked
code calls directly is checked too, and its findings name the helper's ``file:line`` and
the workflow's call that reached it; the helper's own helpers are not followed.

What is not flagged, because it is deterministic or recorded:

- the function given to ``workflow.side_effect`` (a lambda, a ``functools.partial``, a
  local function used only there, or ``self.<method>`` used only there): its value is
  recorded, so non-determinism is its purpose;
- the body of ``with workflow.unsafe.sandbox_unrestricted():`` (an explicit opt-out);
- the pure parts of I/O modules: ``urllib.parse``, ``http.HTTPStatus``,
  ``pathlib.PurePosixPath`` and path arithmetic; only the calls that do I/O are flagged
  (``urllib.request``, ``http.client``, ``Path.read_text()``, ``Path.cwd()``, ...);
- time conversions given a timestamp and a zone: ``time.gmtime(workflow.now().timestamp())``,
  ``datetime.fromtimestamp(ts, tz=timezone.utc)``; ``tomllib.loads``/``json.loads`` of a string;
- ``logger.info(...)`` and the other logging calls (no branch on the level).

What is not seen (the runtime guard, :mod:`spindle._workflow.guard`, still catches the
clock, ``random`` and ``uuid`` calls at run time): values that flow through data the check
cannot follow (a set held in a dict, a naive ``datetime``'s ``.timestamp()``, a clock read
passed in from an attribute set outside the class), calls through objects of unknown type,
dynamic code (``eval``, computed imports), and helpers two levels down.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from typing import Any

from spindle._workflow._determinism_helpers import facts_for_source, follow_helpers, imported_binding, value_hazard
from spindle._workflow._determinism_rules import (
    Finding,
    ModuleFacts,
    annotation_is_string_set,
    dotted,
    gc_paused,
    imports_of,
    parse,
)
from spindle._workflow._determinism_visitor import Checker
from spindle._workflow.defn import WorkflowDefinition

__all__ = ["Finding", "check_workflow", "check_source"]


def _imports(tree: ast.AST, module_source: str | None) -> dict[str, str]:
    imports = imports_of(parse(module_source)) if module_source is not None else {}
    imports.update(imports_of(tree))
    return imports


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.line, f.column))


def check_source(source: str, *, filename: str = "<workflow>", module_source: str | None = None,
                 line_offset: int = 0) -> list[Finding]:
    """Check every function in a snippet of workflow source.

    Imports (and names bound at import) are resolved from ``module_source`` (or the
    snippet). Unlike :func:`check_workflow`, nothing is left out for being unreachable,
    and no helper is followed outside the snippet.
    """
    tree = parse(textwrap.dedent(source))
    facts = facts_for_source(filename, module_source if module_source is not None else textwrap.dedent(source))
    checker = Checker(filename, _imports(tree, module_source), line_offset, module=facts)
    checker.imported_binding = imported_binding
    checker.visit(tree)
    return _sorted(checker.findings)


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


def _set_attributes(cls_node: ast.ClassDef, checker: Checker) -> set[str]:
    """Attributes of the instance that hold sets of non-numbers (so that iterating them is flagged)."""
    found: set[str] = set()
    for node in ast.walk(cls_node):
        target: ast.expr
        if isinstance(node, ast.AnnAssign) and annotation_is_string_set(node.annotation):
            target = node.target
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and checker.unordered(
                node.value) is not None:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        else:
            continue
        if isinstance(target, ast.Name) and node in cls_node.body:
            found.add(target.id)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            found.add(target.attr)
    return found


def _check_class_body(cls_node: ast.ClassDef, checker: Checker) -> None:
    """Class attributes the workflow reads whose value was computed at import from the worker's world."""
    for stmt in cls_node.body:
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [t.id for t in targets if isinstance(t, ast.Name) and t.id in checker.referenced]
        hazard = value_hazard(checker, stmt.value) if names else None
        if hazard is not None:
            checker.report(stmt, f"{cls_node.name}.{names[0]} (class attribute: {hazard[0]})", hazard[1])


def _check_class(tree: ast.Module, d: WorkflowDefinition, checker: Checker) -> None:
    cls_node = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    if cls_node is None:
        return
    methods: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for stmt in cls_node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            methods.setdefault(stmt.name, []).append(stmt)
    checker.owner_names.add(cls_node.name)
    checker.set_attrs = _set_attributes(cls_node, checker)
    todo = [name for name in _entry_names(d) if name in methods]
    done: set[str] = set()
    while todo:
        name = todo.pop()
        if name in done:
            continue
        done.add(name)
        for fn in methods[name]:
            static = any(dotted(dec) == "staticmethod" for dec in fn.decorator_list)
            checker.check_function(fn, owner_param=not static)
        todo += sorted(n for n in checker.referenced if n in methods and n not in done)
    _check_class_body(cls_node, checker)


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
        with gc_paused():
            lines, start = inspect.getsourcelines(target)
            filename = inspect.getsourcefile(target) or "<unknown>"
            module = inspect.getmodule(target)
            module_source = inspect.getsource(module) if module is not None else None
    except (OSError, TypeError):
        return []
    source = "".join(lines)
    tree = parse(textwrap.dedent(source))
    facts: ModuleFacts | None = facts_for_source(filename, module_source) if module_source is not None else None
    checker = Checker(filename, _imports(tree, module_source), start - 1, module=facts)
    checker.imported_binding = imported_binding
    skip: set[str] = set()
    if d.cls is not None:
        _check_class(tree, d, checker)
    else:
        fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if fn is not None:
            skip.add(fn.name)
            checker.check_function(fn, owner_param=False)
    return _sorted(checker.findings) + follow_helpers(checker, skip)
