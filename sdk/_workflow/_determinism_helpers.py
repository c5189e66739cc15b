"""What the static determinism check knows of modules: names bound at import, and the helper
functions a workflow calls in the user's own modules (followed one level deep).

Each module is parsed once (cached by file, modification time and size); the check reads
the modules the workflow's module already imported (``sys.modules``), never imports one.
Private to :mod:`spindle._workflow.determinism_check`.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import sys
import sysconfig

from collections.abc import Collection

from spindle._workflow._determinism_rules import (
    _RANDOM_CLASSES,
    _SEEDED,
    Binding,
    Finding,
    ModuleFacts,
    gc_paused,
    imports_of,
    parse,
)
from spindle._workflow._determinism_visitor import Checker

_LIBRARY_DIRS = tuple({os.path.realpath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")
                       if (p := sysconfig.get_paths().get(key))})
_CACHE_SIZE = 256
_by_source: dict[tuple[str, str], ModuleFacts] = {}
_by_file: dict[tuple[str, int, int], ModuleFacts | None] = {}


def value_hazard(checker: Checker, value: ast.AST) -> tuple[str, str] | None:
    """Why a value computed at import (module or class level) depends on the worker, and the alternative."""
    if isinstance(value, ast.Call) and checker.qualify_expr(value.func) in _RANDOM_CLASSES | {"random.SystemRandom"}:
        return "a random.Random instance made at import", _SEEDED
    s = checker.sub()
    s.visit(value)
    if not s.findings:
        return None
    return f"{s.findings[0].call}, evaluated at import", s.findings[0].alternative


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements, with those of top-level ``if``/``try`` blocks (imports guarded by a test)."""
    out: list[ast.stmt] = []
    for stmt in tree.body:
        out.append(stmt)
        if isinstance(stmt, ast.If):
            out += stmt.body + stmt.orelse
        elif isinstance(stmt, ast.Try):
            out += stmt.body + stmt.orelse + stmt.finalbody + [s for h in stmt.handlers for s in h.body]
    return out


def _facts(filename: str, source: str) -> ModuleFacts:
    tree = parse(source)
    facts = ModuleFacts(filename, imports_of(tree), {}, {}, set(), set())
    checker = Checker(filename, facts.imports, 0, module=facts)
    for stmt in _top_level(tree):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            facts.functions[stmt.name] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if checker.is_logger(stmt.value):
                facts.loggers.update(names)
            elif checker.is_parser(stmt.value):
                facts.parsers.update(names)
            elif (hazard := value_hazard(checker, stmt.value)) is not None:
                call, alternative = hazard
                facts.bindings.update({n: Binding(stmt.lineno, f"{call}, line {stmt.lineno}", alternative)
                                       for n in names})
        elif (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
              and isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr in ("read", "read_file")
              and isinstance(stmt.value.func.value, ast.Name) and stmt.value.func.value.id in facts.parsers):
            name = stmt.value.func.value.id  # CONFIG.read("app.ini") at import: the parser holds a file's content
            facts.bindings[name] = Binding(stmt.lineno, f"a config file read at import, line {stmt.lineno}",
                                           "pass configuration as a workflow argument, or read it in an activity")
    return facts


def facts_for_source(filename: str, source: str) -> ModuleFacts:
    """The facts of a module given its source (cached)."""
    key = (filename, source)
    if key not in _by_source:
        if len(_by_source) >= _CACHE_SIZE:
            _by_source.clear()
        _by_source[key] = _facts(filename, source)
    return _by_source[key]


def is_user_module(name: str, filename: str | None) -> bool:
    """Whether a module is the user's own: not the standard library, an installed package or Spindle."""
    if not filename or not filename.endswith(".py") or name == "spindle" or name.startswith("spindle."):
        return False
    real = os.path.realpath(filename)
    parts = real.split(os.sep)
    return not real.startswith(_LIBRARY_DIRS) and "site-packages" not in parts and "dist-packages" not in parts


def facts_for_module(name: str) -> ModuleFacts | None:
    """The facts of an already imported user module (None for a library, or a module not imported)."""
    module = sys.modules.get(name)
    filename = getattr(module, "__file__", None)
    if module is None or not is_user_module(name, filename):
        return None
    assert filename is not None
    try:
        st = os.stat(filename)
    except OSError:
        return None
    key = (filename, st.st_mtime_ns, st.st_size)
    if key not in _by_file:
        if len(_by_file) >= _CACHE_SIZE:
            _by_file.clear()
        try:
            with gc_paused(), open(filename, encoding="utf-8") as fh:
                source = fh.read()
            _by_file[key] = _facts(filename, source)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            _by_file[key] = None
    return _by_file[key]


def _split(qualified: str) -> tuple[ModuleFacts, str] | None:
    """``package.module.name`` -> (that user module's facts, ``name``)."""
    module, _, attr = qualified.rpartition(".")
    if not module or module not in sys.modules:
        return None
    facts = facts_for_module(module)
    return None if facts is None else (facts, attr)


def imported_binding(qualified: str) -> Binding | None:
    """The binding of a name imported from a user module, when its value depends on the worker."""
    found = _split(qualified)
    return None if found is None else found[0].bindings.get(found[1])


def follow_helpers(checker: Checker, skip: Collection[str] = ()) -> list[Finding]:
    """Check the module-level functions the checked code called directly, one level deep.

    A helper is a function of the workflow's own module (``checker.module``) or of a user
    module it imported; each is checked once, and its findings say which call reached it.
    The helper's own calls are not followed.
    """
    findings: list[Finding] = []
    done: set[tuple[str, str]] = set()
    for target, call in checker.calls:
        if "." not in target:
            if checker.module is None or target in skip:
                continue
            facts, name = checker.module, target
        else:
            found = _split(target)
            if found is None:
                continue
            facts, name = found
        fn = facts.functions.get(name)
        if fn is None or (facts.filename, name) in done:
            continue
        done.add((facts.filename, name))
        helper = Checker(facts.filename, facts.imports, 0, module=facts)
        helper.imported_binding = imported_binding
        helper.check_function(fn, owner_param=False)
        via = f"the call {target}() at {checker.filename}:{call.lineno + checker.offset}"
        findings += [dataclasses.replace(f, via=via) for f in helper.findings]
    return findings
