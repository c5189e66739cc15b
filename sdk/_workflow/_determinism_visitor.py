"""The static determinism check's AST visitor: the non-deterministic calls in the code it is given.

Private to :mod:`spindle._workflow.determinism_check` (which documents what is checked).
"""

from __future__ import annotations

import ast

from collections.abc import Callable, Iterable

from spindle._workflow import _determinism_rules as rules
from spindle._workflow._determinism_rules import (
    Binding,
    Finding,
    ModuleFacts,
    annotation_is_string_set,
    dotted,
    hazard_of,
    is_none,
    is_number,
    parse,
    stored_names,
)


class Checker(ast.NodeVisitor):
    """Collects findings in the nodes it visits, the ``self.<name>`` references it meets and the
    calls it meets to module-level functions (helpers the check may follow)."""

    def __init__(self, filename: str, imports: dict[str, str], line_offset: int,
                 owner_names: Iterable[str] = (), module: ModuleFacts | None = None) -> None:
        self.filename = filename
        self.imports = imports
        self.offset = line_offset
        self.module = module
        self.findings: list[Finding] = []
        self._seen: set[tuple[int, int]] = set()
        self.owner_names = set(owner_names)  # names that mean "the workflow class or instance"
        self.referenced: set[str] = set()  # attributes read on those names
        self.set_attrs: set[str] = set()  # attributes of the instance that hold sets (of non-numbers)
        self.calls: list[tuple[str, ast.Call]] = []  # (name, call) of calls to module-level or imported names
        #: Binding of an imported qualified name (a user module's name bound at import), if any.
        self.imported_binding: Callable[[str], Binding | None] = lambda q: None
        self._path_names: set[str] = set()
        self._set_names: set[str] = set()
        self._logger_names: set[str] = set(module.loggers) if module else set()
        self._parser_names: set[str] = set(module.parsers) if module else set()
        self._locals: set[str] = set()
        self._skip_defs: set[str] = set()
        self._call_funcs: set[int] = set()
        self._order_free: set[int] = set()
        self._outer: dict[int, ast.Call] = {}

    def sub(self) -> Checker:
        """A throwaway checker with this one's context (to ask whether an expression is clean)."""
        s = Checker(self.filename, self.imports, self.offset, self.owner_names, self.module)
        s.imported_binding = self.imported_binding
        s._locals, s._logger_names, s._parser_names = self._locals, self._logger_names, self._parser_names
        return s

    # ------------------------------------------------------------ names

    def _qualify(self, name: str) -> str:
        head, _, rest = name.partition(".")
        if head in self.imports:
            base = self.imports[head]
            return f"{base}.{rest}" if rest else base
        return name

    def _qualified_call(self, node: ast.Call) -> str | None:
        name = dotted(node.func)
        return None if name is None else self._qualify(name)

    def qualify_expr(self, node: ast.AST) -> str | None:
        """The fully qualified name an expression evidently denotes through the imports, or None."""
        if isinstance(node, ast.Name):
            return None if node.id in self._locals else self.imports.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualify_expr(node.value)
            return None if base is None else f"{base}.{node.attr}"
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(
                node.args[0].value, str):  # importlib.import_module("time"), __import__("time")
            if self.qualify_expr(node.func) == "importlib.import_module":
                return node.args[0].value
            if isinstance(node.func, ast.Name) and node.func.id == "__import__":
                return node.args[0].value.split(".")[0]
        return None

    def _builtin(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name) and node.id not in self._locals and node.id not in self.imports:
            return node.id
        return None

    def _is_api(self, node: ast.AST, suffix: str) -> bool:
        """Whether ``node`` calls Spindle's ``workflow.<suffix>`` (however it was imported)."""
        if not isinstance(node, ast.Call):
            return False
        q = self._qualified_call(node)
        return q is not None and (q == f"workflow.{suffix}" or q.endswith(f".workflow.{suffix}")
                                  or any(q == f"{module}.{suffix}" for module in rules._API_MODULES))

    def _is_path(self, node: ast.AST) -> bool:
        """Whether ``node`` evidently evaluates to a concrete ``pathlib.Path``."""
        if isinstance(node, ast.Call):
            if self._qualified_call(node) in rules._PATH_CLASSES:
                return True
            if isinstance(node.func, ast.Attribute) and node.func.attr in rules._PATH_DERIVED:
                return self._is_path(node.func.value)
            return False
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self._is_path(node.left)
        if isinstance(node, ast.Attribute) and node.attr in rules._PATH_DERIVED:
            return self._is_path(node.value)
        return isinstance(node, ast.Name) and node.id in self._path_names

    def _annotation_is_path(self, annotation: ast.AST | None) -> bool:
        if annotation is None:
            return False
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = parse(annotation.value, mode="eval").body
            except SyntaxError:
                return False
        name = dotted(annotation) if annotation is not None else None
        return name is not None and self._qualify(name) in rules._PATH_CLASSES

    def is_logger(self, node: ast.AST) -> bool:
        """Whether ``node`` evidently is a logger (``logging.getLogger(...)``, ``logging.root``, ...)."""
        if isinstance(node, ast.Call):
            return self.qualify_expr(node.func) == "logging.getLogger"
        if isinstance(node, ast.Name) and node.id in self._logger_names and node.id not in self._locals:
            return True
        q = self.qualify_expr(node)
        return q is not None and (q == "logging.root" or q.endswith("workflow.logger"))

    def is_parser(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            return self.qualify_expr(node.func) in rules._PARSER_CLASSES
        return isinstance(node, ast.Name) and node.id in self._parser_names

    def unordered(self, node: ast.AST) -> str | None:
        """How ``node`` is shown when it evidently is a set whose order differs per process, else None."""
        if isinstance(node, ast.Set):
            return None if all(is_number(e) for e in node.elts) else "a set literal"
        if isinstance(node, ast.SetComp):
            return "a set comprehension"
        if isinstance(node, ast.Call):
            name = self._builtin(node.func)
            if name in ("set", "frozenset"):
                arg = node.args[0] if node.args else None
                if arg is None or isinstance(arg, (ast.List, ast.Tuple, ast.Set)) and all(
                        is_number(e) for e in arg.elts):
                    return None
                return f"{name}(...)"
            if isinstance(node.func, ast.Attribute) and node.func.attr in rules._SET_METHODS:
                return self.unordered(node.func.value)
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)):
            return self.unordered(node.left) or self.unordered(node.right)
        if isinstance(node, ast.Name) and node.id in self._set_names:
            return f"{node.id} (a set)"
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in self.owner_names and node.attr in self.set_attrs):
            return f"{node.value.id}.{node.attr} (a set)"
        return None

    def worldly(self, node: ast.AST) -> str | None:
        """What in an expression depends on the worker (a clock read, an id(), ...), or None."""
        s = self.sub()
        s.visit(node)
        if s.findings:
            return s.findings[0].call
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and self._builtin(n.func) == "id":
                return "id()"
        return None

    # ------------------------------------------------------------ roots

    def check_function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, *, owner_param: bool) -> None:
        """Check a function's body (not its decorators or defaults: those run at import)."""
        args = fn.args
        saved = (set(self._path_names), set(self._set_names), set(self._logger_names), set(self._parser_names),
                 self._locals)
        self._locals = self._locals | stored_names(fn)
        for p in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            if self._annotation_is_path(p.annotation):
                self._path_names.add(p.arg)
            if annotation_is_string_set(p.annotation):
                self._set_names.add(p.arg)
            self._logger_names.discard(p.arg)
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
        self._path_names, self._set_names, self._logger_names, self._parser_names, self._locals = saved
        if added_owner is not None:
            self.owner_names.discard(added_owner)

    # ------------------------------------------------------------ findings

    def report(self, node: ast.AST, shown: str, alternative: str) -> None:
        key = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(self.filename, node.lineno + self.offset, node.col_offset,  # type: ignore[attr-defined]
                                     shown, alternative))

    def _report_unordered(self, node: ast.AST) -> None:
        shown = self.unordered(node)
        if shown is not None:
            self.report(node, f"iteration over {shown}", rules._SET_ORDER)

    def _report_reference(self, node: ast.AST, q: str) -> bool:
        """Report a read of a worker-dependent value, or an uncalled reference to a hazardous function."""
        value = next((v for v in rules._VALUES if q == v or q.startswith(v + ".")), None)
        if value is not None:
            self.report(node, value, rules._EXACT[value])
        elif q in rules._TZ_ATTRIBUTES:
            self.report(node, f"{q} (the worker's local time zone)", rules._LOCAL_TZ)
        elif q in rules._EXACT and q not in ("open", "input") or q in rules._CLOCK_UNLESS_GIVEN:
            self.report(node, f"{q} (referenced, to be called later)", rules._EXACT.get(q, rules._TIME))
        else:
            binding = self.imported_binding(q)
            if binding is None:
                return False
            self.report(node, f"{q} ({binding.call})", binding.alternative)
        return True

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

    def visit_arguments(self, node: ast.arguments) -> None:
        for default in [*node.defaults, *node.kw_defaults]:
            if default is not None:
                self.visit(default)  # annotations are types, not calls

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.args)
        saved = self._locals
        self._locals = saved | stored_names(node)
        self.visit(node.body)
        self._locals = saved

    def _note_binding(self, target: ast.AST, value: ast.AST | None, annotation: ast.AST | None = None) -> None:
        if not isinstance(target, ast.Name):
            return
        name = target.id
        for names, yes in ((self._path_names, self._annotation_is_path(annotation)
                            or value is not None and self._is_path(value)),
                           (self._set_names, annotation_is_string_set(annotation)
                            or value is not None and self.unordered(value) is not None),
                           (self._logger_names, value is not None and self.is_logger(value)),
                           (self._parser_names, value is not None and self.is_parser(value))):
            if yes:
                names.add(name)
            else:
                names.discard(name)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._note_binding(t, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._note_binding(node.target, node.value, node.annotation)
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_With(self, node: ast.With) -> None:
        if any(self._is_api(item.context_expr, "unsafe.sandbox_unrestricted") for item in node.items):
            for item in node.items:
                self.visit(item)
            return  # an explicit opt-out of the determinism guards
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self._report_unordered(node.iter)
        self.generic_visit(node)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> None:
        self._report_unordered(node.iter)
        self.generic_visit(node)

    def _visit_ordered_comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.DictComp) -> None:
        if id(node) not in self._order_free:
            for gen in node.generators:
                self._report_unordered(gen.iter)
        self.generic_visit(node)

    visit_ListComp = visit_GeneratorExp = visit_DictComp = _visit_ordered_comprehension

    def visit_Starred(self, node: ast.Starred) -> None:
        self._report_unordered(node.value)
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
        self._call_funcs.add(id(node.func))
        if isinstance(node.func, ast.Call):
            self._outer[id(node.func)] = node  # getattr(module, name)(...): its arguments
        q = self.qualify_expr(node.func)
        name = self._builtin(node.func)
        if q is not None:
            self._check_qualified_call(node, q)
            self.calls.append((q, node))
        elif name is not None:
            self._check_builtin_call(node, name)
        if isinstance(node.func, ast.Attribute):
            self._check_method_call(node, node.func.attr, node.func.value)
        self.generic_visit(node)

    def _check_builtin_call(self, node: ast.Call, name: str) -> None:
        if name in ("open", "input"):
            self.report(node, f"{name}()", rules._EXACT[name])
        elif name == "hash" and not (node.args and is_number(node.args[0])):
            self.report(node, "hash()", rules._HASH)
        elif name == "getattr" and len(node.args) >= 2:
            self._check_getattr(node)
        elif name in rules._ORDERING_CALLS:
            for a in node.args:
                self._report_unordered(a)
        elif name in rules._ORDER_FREE:
            self._order_free.update(id(a) for a in node.args)
        elif self.module is not None and name in self.module.functions:
            self.calls.append((name, node))

    def _check_method_call(self, node: ast.Call, attr: str, receiver: ast.AST) -> None:
        if attr in rules._FILE_METHODS:
            self.report(node, f".{attr}()", rules._FILES)
        elif attr in rules._PATH_IO and self._is_path(receiver):
            self.report(node, f"Path.{attr}()", rules._FILES)
        elif attr in rules._LEVEL_METHODS:
            self.report(node, f"logger.{attr}() (the worker's log level)", rules._LOG_LEVEL)
        elif attr in rules._PARSER_READS and self.is_parser(receiver):
            self.report(node, f"ConfigParser.{attr}()", rules._CONFIG)
        elif attr == "astimezone" and not node.args and not node.keywords:
            self.report(node, ".astimezone() (the worker's local time zone)", rules._LOCAL_TZ)
        elif attr == "join" and len(node.args) == 1:
            self._report_unordered(node.args[0])
        elif attr == "pop" and not node.args and self.unordered(receiver) is not None:
            self.report(node, f"{self.unordered(receiver)}.pop() (an arbitrary element)", rules._SET_ORDER)

    def _check_getattr(self, node: ast.Call) -> None:
        module = self.qualify_expr(node.args[0])
        if module not in rules._GETATTR_MODULES:
            return
        attr = node.args[1]
        if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
            self.report(node, f"getattr({module}, <a computed name>)", rules._GETATTR)
            return
        q = f"{module}.{attr.value}"
        if q in rules._CLOCK_UNLESS_GIVEN and id(node) in self._outer:  # getattr(time, "gmtime")(secs) is pure
            self._check_qualified_call(self._outer[id(node)], q)
            return
        alternative = hazard_of(q) or (rules._TIME if q in rules._CLOCK_UNLESS_GIVEN else None)
        if alternative is not None:
            self.report(node, f"getattr({module}, {attr.value!r})", alternative)

    def _check_qualified_call(self, node: ast.Call, q: str) -> None:
        given_any = any(isinstance(a, ast.Starred) for a in node.args)
        if q in rules._CLOCK_UNLESS_GIVEN:
            i = rules._CLOCK_UNLESS_GIVEN[q]
            if not (len(node.args) > i and not is_none(node.args[i]) or given_any):
                self.report(node, f"{q}()", rules._TIME)
            elif q in rules._LOCAL_TIME_ZONE:
                self.report(node, f"{q}(secs) (the worker's local time zone)", rules._LOCAL_TZ)
            return
        if q == "datetime.datetime.fromtimestamp":
            tz = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "tz"), None)
            if (tz is None or is_none(tz)) and not given_any:
                self.report(node, f"{q}(ts) without tz (the worker's local time zone)", rules._FROM_TS)
            return
        if q in rules._RANDOM_CLASSES:
            seed = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "x"), None)
            if (seed is None or is_none(seed)) and not given_any:
                self.report(node, f"{q}() (unseeded: seeded from the operating system)", rules._SEEDED)
            elif seed is not None and (source := self.worldly(seed)) is not None:
                self.report(node, f"{q}(seeded from {source})", rules._SEEDED)
            return  # seeded from the input, workflow.random() or a constant: deterministic
        owner, _, method = q.rpartition(".")
        if owner in rules._PATH_CLASSES and method in rules._PATH_IO:
            self.report(node, f"{q}()", rules._FILES)
            return
        alternative = hazard_of(q)
        if alternative is not None:
            self.report(node, f"{q}()", alternative)
            return
        binding = self.imported_binding(q)
        if binding is not None:
            self.report(node, f"{q}() ({binding.call})", binding.alternative)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and node.value.id in self.owner_names:
            self.referenced.add(node.attr)
        if isinstance(node.ctx, ast.Load):
            q = self.qualify_expr(node)
            if q is not None and (id(node) not in self._call_funcs or any(
                    q == v or q.startswith(v + ".") for v in rules._VALUES)) and self._report_reference(node, q):
                return
            if node.attr == "level" and self.is_logger(node.value):
                self.report(node, "logger.level (the worker's log level)", rules._LOG_LEVEL)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load) or node.id in self._locals:
            return
        q = self.imports.get(node.id)
        if q is not None:
            if id(node) not in self._call_funcs or any(q == v or q.startswith(v + ".") for v in rules._VALUES):
                self._report_reference(node, q)
            return
        binding = self.module.bindings.get(node.id) if self.module is not None else None
        if binding is not None:
            self.report(node, f"{node.id} ({binding.call})", binding.alternative)


def _side_effect_only_defs(body: list[ast.stmt], checker: Checker) -> set[str]:
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
