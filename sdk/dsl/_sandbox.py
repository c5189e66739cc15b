"""The sandbox expressions run in: what they may reach, and how much they may compute.

``DslEnvironment`` is Jinja2's ``ImmutableSandboxedEnvironment`` (no private
attributes, no mutation) narrowed further, so that nothing an expression says
can hang or exhaust a worker, and every refusal is deterministic (it depends on
sizes and counts, never on a clock), as replay requires:

* Every operator, filter, test, method call and ``~`` is counted against a
  per-evaluation work budget (:data:`MAX_WORK`, in units of the sizes of the
  values produced), and each value they produce may be at most
  :data:`MAX_VALUE_SIZE` long and :data:`MAX_VALUE_NESTING` deep; integers at
  most :data:`MAX_INT_BITS` bits. Operations whose result size is known in
  advance (``**``, repetition, ``%``/``format`` widths, ``replace``,
  ``join``, ``center``, ...) are refused *before* they allocate.
* Callables are values expressions cannot print or return: a method or a
  global read as a value is a :class:`_Callable` whose ``str``/``repr`` raise,
  and calls are limited to the globals ``range`` and ``dict`` and to an
  allow-list of side-effect-free methods of strings, lists and mappings.
* ``steps`` and ``inputs`` are :class:`Scope` objects whose attributes are
  their keys only, so no step or input name can collide with a Python
  attribute; on any other mapping a key wins over a method of the same name.
* The result handed back (:func:`plain_result`) is JSON data (strings,
  numbers, booleans, null, lists, objects) of at most :data:`MAX_RESULT_SIZE`.

All limits raise :class:`LimitExceeded` (or :class:`NotData`), which
``_expressions.evaluate`` turns into an ``ExpressionError`` naming the expression.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import re
import string

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import jinja2

from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment, safe_range
from jinja2.utils import _PassArg, pass_context

__all__ = [
    "MAX_INT_BITS",
    "MAX_RESULT_SIZE",
    "MAX_VALUE_NESTING",
    "MAX_VALUE_SIZE",
    "MAX_WORK",
    "DslEnvironment",
    "LimitExceeded",
    "NotData",
    "Scope",
    "evaluation",
    "plain_result",
]

#: Longest value (characters of text, or about the length of a list's or mapping's
#: JSON) an operator, filter, method call or ``~`` may produce.
MAX_VALUE_SIZE = 1_000_000
#: Largest value an expression may evaluate to (it may pass on a bigger input as is).
MAX_RESULT_SIZE = 10_000_000
#: Work one evaluation may do: each operation costs 1 plus the size of what it produces.
MAX_WORK = 10_000_000
#: Deepest nesting of lists and mappings in a value an expression produces.
MAX_VALUE_NESTING = 100
#: Largest integer an expression may produce, in bits (about 1,233 decimal digits).
MAX_INT_BITS = 4096
#: Widest ``indent`` a ``tojson`` may use.
MAX_JSON_INDENT = 16
#: Most groups ``batch`` and ``slice`` may make (as many as ``range`` gives numbers).
MAX_BATCH = 100_000
#: Filters that turn a whole value into text.
_TEXT_FILTERS = ("string", "pprint", "tojson", "escape", "e", "forceescape", "urlencode", "xmlattr")

_REMOVED_GLOBALS = ("lipsum", "cycler", "joiner", "namespace")
_REMOVED_FILTERS = ("random",)

#: Methods expressions may call, by the type they belong to (everything else is refused).
_STR_METHODS = frozenset(
    "capitalize casefold center count endswith find format format_map index isalnum isalpha "
    "isdecimal isdigit isidentifier islower isnumeric isspace istitle isupper join ljust lower "
    "lstrip partition removeprefix removesuffix replace rfind rindex rjust rpartition rsplit "
    "rstrip split splitlines startswith strip swapcase title upper zfill".split()
)
_SEQUENCE_METHODS = frozenset({"count", "index"})
_MAPPING_METHODS = frozenset({"get", "items", "keys", "values"})


class LimitExceeded(Exception):
    """An expression went over one of the limits of this module."""


class NotData(Exception):
    """An expression used a function as data (printed, formatted or returned it)."""


class Scope:
    """A read-only namespace for expressions: ``scope.key`` and ``scope['key']``.

    Expressions see only its keys (``DslEnvironment`` never looks up its Python
    attributes), so a step called ``label`` or an input called ``items`` is
    always the step or the input.
    """

    __slots__ = ("_data", "label")

    def __init__(self, data: Mapping[str, Any], label: str = "mapping") -> None:
        self._data = data
        self.label = label

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        try:
            return key in self._data
        except TypeError:  # unhashable
            return False

    def __repr__(self) -> str:
        return repr(dict(self._data))

    def items(self) -> Iterable[tuple[str, Any]]:
        """The entries (for measuring and copying; expressions cannot call this)."""
        return self._data.items()


# ------------------------------------------------------------------ the budget


class _Budget:
    """What one evaluation has left to spend, and the sizes it has measured."""

    __slots__ = ("memo", "work")

    def __init__(self) -> None:
        self.work = MAX_WORK
        #: id(value) -> (value, size); the value is kept so that its id stays unique.
        self.memo: dict[int, tuple[Any, int]] = {}

    def charge(self, units: int, what: str) -> None:
        self.work -= units
        if self.work < 0:
            raise LimitExceeded(
                f"too much work: more than {MAX_WORK:,} units (each operation costs 1 plus the size "
                f"of its result; the last was {what})"
            )

    def size(self, value: Any, limit: int) -> int:
        """About the length of ``value`` as text; stops counting past ``limit``."""
        return _measure(value, self, limit, 0)

    def produced(self, value: Any, what: str) -> Any:
        """Check and charge a value an operation produced; return it."""
        size = self.size(value, MAX_VALUE_SIZE)
        if size > MAX_VALUE_SIZE:
            raise LimitExceeded(f"{what} would produce a value of more than {MAX_VALUE_SIZE:,} characters")
        self.charge(1 + size, what)
        return value


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("spindle_dsl_budget", default=None)


def _budget() -> _Budget:
    budget = _BUDGET.get()
    # Outside ``evaluation()`` (Jinja used directly): a fresh budget per operation.
    return budget if budget is not None else _Budget()


@contextlib.contextmanager
def evaluation() -> Iterator[None]:
    """``with evaluation():`` runs one expression with a fresh budget."""
    token = _BUDGET.set(_Budget())
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _int_bits(value: int) -> int:
    bits = value.bit_length()
    if bits > MAX_INT_BITS:
        raise LimitExceeded(f"an integer of more than {MAX_INT_BITS} bits")
    return bits


def _measure(value: Any, budget: _Budget, limit: int, depth: int) -> int:
    """The size of ``value`` (see :data:`MAX_VALUE_SIZE`), memoised per evaluation."""
    if isinstance(value, str):
        return len(value)
    if value is None or isinstance(value, (bool, float)):
        return 5
    if isinstance(value, int):
        return _int_bits(value) // 3 + 1
    if isinstance(value, range):
        return 8 * len(value)
    if not isinstance(value, (Mapping, Scope, list, tuple, AbstractSet)):
        return 1  # iterators (lazy, counted when materialised), callables, undefined
    known = budget.memo.get(id(value))
    if known is not None:
        return known[1]
    if depth >= MAX_VALUE_NESTING:
        raise LimitExceeded(f"a value nested more than {MAX_VALUE_NESTING} levels deep")
    total = 2
    if isinstance(value, (Mapping, Scope)):
        for key, item in value.items():
            total += _measure(key, budget, limit, depth + 1) + _measure(item, budget, limit, depth + 1) + 4
            if total > limit:
                break
    else:
        for item in value:
            total += _measure(item, budget, limit, depth + 1) + 2
            if total > limit:
                break
    budget.memo[id(value)] = (value, total)
    return total


# ------------------------------------------------------------------ callables


class _Callable:
    """A function or method read by an expression: callable, but not data.

    Turning it into text (``~``, ``%``, ``format``, ``string``, ...) or
    returning it raises :class:`NotData`, so no address or internal name leaks
    and a result is always data.
    """

    __slots__ = ("name", "owner", "target")

    def __init__(self, target: Callable[..., Any], name: str, owner: Any = None) -> None:
        self.target = target
        self.name = name
        self.owner = owner

    def describe(self) -> str:
        if self.owner is None:
            return f"function {self.name}"
        return f"method {type(self.owner).__name__}.{self.name}"

    def _refuse(self, *_: Any) -> str:
        raise NotData(f"{self.describe()} is a function, not a value (call it, or leave it out)")

    __str__ = __repr__ = __format__ = _refuse

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # only through DslEnvironment.call
        raise NotData(f"{self.describe()} cannot be called here")


def _method_allowed(owner: Any, name: str) -> bool:
    if isinstance(owner, str):
        return name in _STR_METHODS
    if isinstance(owner, (list, tuple)):
        return name in _SEQUENCE_METHODS
    if isinstance(owner, Mapping):
        return name in _MAPPING_METHODS
    return False


def _argument(args: Sequence[Any], kwargs: Mapping[str, Any], position: int, name: str, default: Any) -> Any:
    if len(args) > position:
        return args[position]
    return kwargs.get(name, default)


def _check_width(width: Any, what: str) -> None:
    if isinstance(width, int) and width > MAX_VALUE_SIZE:
        raise LimitExceeded(f"{what} width {width:,} is over {MAX_VALUE_SIZE:,}")


def _check_total(estimate: int, what: str) -> None:
    if estimate > MAX_VALUE_SIZE:
        raise LimitExceeded(f"{what} would produce a value of more than {MAX_VALUE_SIZE:,} characters")


def _replace_estimate(text: str, old: str, new: str, count: Any) -> int:
    occurrences = len(text) + 1 if old == "" else text.count(old)
    if isinstance(count, int) and count >= 0:
        occurrences = min(occurrences, count)
    return len(text) + occurrences * max(0, len(new) - len(old))


def _materialise(items: Any, budget: _Budget, what: str) -> list[Any]:
    """``items`` as a list; an iterator's items are counted as produced."""
    if isinstance(items, (list, tuple)):
        return list(items)
    listed = list(items)
    budget.charge(1 + len(listed), what)
    return listed


def _join_estimate(separator: str, items: Sequence[Any], budget: _Budget) -> int:
    parts = sum(budget.size(item, MAX_VALUE_SIZE + 1) for item in items)
    return parts + len(separator) * max(0, len(items) - 1)


_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([a-zA-Z%])")


def _printf_estimate(template: str, values: Any, budget: _Budget) -> int:
    """An upper bound of the length of ``template % values`` (``*`` widths refused)."""
    widths = 0
    fields = 0
    for match in _PRINTF_SPEC.finditer(template):
        width, precision, _ = match.groups()
        if width == "*" or precision == "*":
            raise LimitExceeded("'*' widths in % formats are not allowed in expressions")
        widths += int(width or 0) + int(precision or 0)
        fields += 1
    largest = budget.size(values, MAX_VALUE_SIZE + 1)
    return len(template) + widths + fields * largest


def _format_estimate(template: str, args: Sequence[Any], kwargs: Mapping[str, Any], budget: _Budget) -> int:
    """An upper bound of the length of ``template.format(*args, **kwargs)``."""
    widths = 0
    fields = 0
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return len(template)  # format() will raise the same error
    for _, field, spec, _ in parsed:
        if field is None:
            continue
        fields += 1
        if spec and "{" in spec:
            raise LimitExceeded("nested '{...}' inside a format spec is not allowed in expressions")
        widths += sum(int(digits) for digits in re.findall(r"\d+", spec or ""))
    largest = max([budget.size(value, MAX_VALUE_SIZE + 1) for value in (*args, *kwargs.values())] or [0])
    return len(template) + widths + fields * largest


def _method_precheck(owner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                     budget: _Budget) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Refuse (before it runs) a method call whose result would be too big."""
    what = f"{type(owner).__name__}.{name}()"
    if not isinstance(owner, str):
        return args, kwargs
    if name in ("center", "ljust", "rjust", "zfill"):
        _check_width(_argument(args, kwargs, 0, "width", 0), what)
    elif name == "replace":
        old, new = _argument(args, kwargs, 0, "old", ""), _argument(args, kwargs, 1, "new", "")
        if isinstance(old, str) and isinstance(new, str):
            _check_total(_replace_estimate(owner, old, new, _argument(args, kwargs, 2, "count", -1)), what)
    elif name == "join" and args:
        items = _materialise(args[0], budget, what)
        _check_total(_join_estimate(owner, items, budget), what)
        args = (items, *args[1:])
    elif name == "format":
        _check_total(_format_estimate(owner, args, kwargs, budget), what)
    elif name == "format_map" and args:
        mapping = args[0]
        values = [value for _, value in mapping.items()] if isinstance(mapping, (Mapping, Scope)) else [mapping]
        _check_total(_format_estimate(owner, values, {}, budget), what)
    return args, kwargs


# ------------------------------------------------------------------ filters and tests


def _filter_precheck(name: str, bound: dict[str, Any], budget: _Budget) -> None:
    """Refuse (before it runs) a filter call whose result would be too big."""
    what = f"filter {name!r}"
    if name == "center":
        _check_width(bound.get("width"), what)
    elif name == "indent":
        text, width = str(bound.get("s", "")), bound.get("width", 4)
        pad = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
        _check_total(len(text) + (text.count("\n") + 1) * max(0, pad), what)
    elif name == "wordwrap":
        text, wrap = str(bound.get("s", "")), bound.get("wrapstring")
        _check_total(len(text) * (1 + (len(wrap) if isinstance(wrap, str) else 1)), what)
    elif name == "replace":
        source, old, new = bound.get("s"), bound.get("old"), bound.get("new")
        if isinstance(source, str) and isinstance(old, str) and isinstance(new, str):
            _check_total(_replace_estimate(source, old, new, bound.get("count")), what)
    elif name == "format":
        template = bound.get("value")
        if isinstance(template, str):
            values = bound.get("kwargs") or bound.get("args") or ()
            _check_total(_printf_estimate(template, values, budget), what)
    elif name in ("batch", "slice"):
        count = bound.get("linecount", bound.get("slices"))
        if isinstance(count, int) and count > MAX_BATCH:
            raise LimitExceeded(f"{what} count {count:,} is over {MAX_BATCH:,}")
    if name in _TEXT_FILTERS:  # the text is at least as long as the value it is made of
        _check_total(budget.size(bound.get("value", bound.get("s")), MAX_VALUE_SIZE + 1), what)
    if name == "tojson":
        indent = bound.get("indent")
        if (isinstance(indent, int) and indent > MAX_JSON_INDENT) or (
            isinstance(indent, str) and len(indent) > MAX_JSON_INDENT
        ):
            raise LimitExceeded(f"{what} indent is over {MAX_JSON_INDENT}")
    elif name == "sum":
        start = bound.get("start", 0)
        if isinstance(start, bool) or not isinstance(start, (int, float)):
            raise LimitExceeded(f"{what} adds numbers only: start must be a number")


#: Names Jinja's filters give the context, eval context or environment they are passed.
_PASSED_NAMES = ("context", "eval_ctx", "environment", "env")


def _bind(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        return dict(signature.bind_partial(*args, **kwargs).arguments)
    except TypeError:
        return {}  # the filter itself reports the bad arguments


def _guard_filter(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    pass_arg = _PassArg.from_obj(original)
    signature = inspect.signature(original)
    parameters = list(signature.parameters.values())
    if pass_arg is not None and parameters and parameters[0].name in _PASSED_NAMES:
        signature = signature.replace(parameters=parameters[1:])  # Jinja passes that one itself
    checked = name in ("center", "indent", "wordwrap", "replace", "format", "batch", "slice", "tojson", "sum",
                       "join", *_TEXT_FILTERS)

    @pass_context
    @functools.wraps(original)
    def guarded(context: Context, *args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        what = f"filter {name!r}"
        if checked:
            bound = _bind(signature, args, kwargs)
            if name == "join" and args:
                items = _materialise(args[0], budget, what)
                separator = bound.get("d", "")
                if isinstance(separator, str):
                    if bound.get("attribute") is None:
                        _check_total(_join_estimate(separator, items, budget), what)
                    else:  # only the attribute is joined: the separators are what can be big
                        _check_total(len(separator) * max(0, len(items) - 1), what)
                args = (items, *args[1:])
            else:
                _filter_precheck(name, bound, budget)
        budget.charge(1 + sum(len(a) for a in args if isinstance(a, str)), what)
        if pass_arg is _PassArg.context:
            result = original(context, *args, **kwargs)
        elif pass_arg is _PassArg.eval_context:
            result = original(context.eval_ctx, *args, **kwargs)
        elif pass_arg is _PassArg.environment:
            result = original(context.environment, *args, **kwargs)
        else:
            result = original(*args, **kwargs)
        return budget.produced(result, what)

    return guarded


def _guard_test(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    pass_arg = _PassArg.from_obj(original)

    @pass_context
    @functools.wraps(original)
    def guarded(context: Context, *args: Any, **kwargs: Any) -> Any:
        _budget().charge(1 + sum(len(a) for a in args if isinstance(a, str)), f"test {name!r}")
        if pass_arg is _PassArg.context:
            return original(context, *args, **kwargs)
        if pass_arg is _PassArg.eval_context:
            return original(context.eval_ctx, *args, **kwargs)
        if pass_arg is _PassArg.environment:
            return original(context.environment, *args, **kwargs)
        return original(*args, **kwargs)

    return guarded


# ------------------------------------------------------------------ the environment


class _CodeGenerator(CodeGenerator):
    """Jinja's code generator, with ``~`` going through the environment (to be counted)."""

    def visit_Concat(self, node: jinja2.nodes.Concat, frame: Frame) -> None:  # noqa: N802 - Jinja's name
        self.write("environment.dsl_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class DslEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox of ``${{ }}`` expressions (see the module docstring)."""

    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})

    def __init__(self, undefined: type[jinja2.Undefined]) -> None:
        # optimized=False: nothing is evaluated at compile time, outside the budget.
        super().__init__(undefined=undefined, autoescape=False, optimized=False)
        for name in _REMOVED_GLOBALS:
            self.globals.pop(name, None)
        for name in _REMOVED_FILTERS:
            self.filters.pop(name, None)
        self.globals["range"] = _Callable(safe_range, "range")
        self.globals["dict"] = _Callable(dict, "dict")
        self.filters["attr"] = pass_environment_attr
        self.filters = {name: _guard_filter(name, fn) for name, fn in self.filters.items()}
        tests: dict[str, Any] = dict(self.tests)  # typeshed: "function"; any callable will do
        self.tests = {name: _guard_test(name, fn) for name, fn in tests.items()}

    # -- lookups ------------------------------------------------------------------

    def _lookup(self, obj: Any, key: Any) -> Any:
        if isinstance(key, str) and key in obj:
            return obj[key]
        return self.undefined(obj=obj, name=key)

    def _wrap(self, obj: Any, name: Any, value: Any) -> Any:
        if callable(value) and not isinstance(value, (jinja2.Undefined, _Callable)):
            return _Callable(value, str(name), obj)
        return value

    def getattr(self, obj: Any, attribute: str) -> Any:
        """``obj.attribute``: a Scope's key; a mapping's key before its methods."""
        if isinstance(obj, Scope):
            return self._lookup(obj, attribute)
        if isinstance(obj, Mapping) and attribute in obj:
            return obj[attribute]
        return self._wrap(obj, attribute, super().getattr(obj, attribute))

    def getitem(self, obj: Any, argument: Any) -> Any:
        """``obj[argument]``: a Scope's key; otherwise Jinja's sandboxed lookup."""
        if isinstance(obj, Scope):
            return self._lookup(obj, argument)
        return self._wrap(obj, argument, super().getitem(obj, argument))

    # -- operations ---------------------------------------------------------------

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        """A call: the globals ``range``/``dict`` and allow-listed methods only."""
        if isinstance(__obj, jinja2.Undefined):
            return super().call(__context, __obj, *args, **kwargs)  # raises the undefined error
        if not isinstance(__obj, _Callable):
            raise NotData(f"a {type(__obj).__name__} cannot be called")
        budget = _budget()
        what = f"{__obj.describe()}()"
        if __obj.owner is not None:
            if not _method_allowed(__obj.owner, __obj.name):
                raise NotData(f"{__obj.describe()} is not available in expressions")
            args, kwargs = _method_precheck(__obj.owner, __obj.name, args, kwargs, budget)
        budget.charge(1 + sum(len(a) for a in args if isinstance(a, str)), what)
        result = super().call(__context, __obj.target, *args, **kwargs)
        return budget.produced(result, what)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        """An arithmetic operator, refused before it runs if its result would be too big."""
        budget = _budget()
        what = f"operator {operator!r}"
        if operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
            if abs(left) > 1 and (abs(left).bit_length() - 1) * right > MAX_INT_BITS:
                raise LimitExceeded(f"{what}: the result would have more than {MAX_INT_BITS} bits")
        elif operator == "*":
            for sequence, count in ((left, right), (right, left)):
                if isinstance(sequence, (str, list, tuple)) and isinstance(count, int) and count > 0:
                    _check_total(len(sequence) * count, what)
        elif operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
            _check_total(len(left) + len(right), what)
        elif operator == "%" and isinstance(left, str):
            _check_total(_printf_estimate(left, right, budget), what)
        return budget.produced(self.binop_table[operator](left, right), what)

    def dsl_concat(self, parts: tuple[Any, ...]) -> str:
        """``a ~ b ~ c``: text of the parts, joined."""
        budget = _budget()
        _check_total(sum(budget.size(part, MAX_VALUE_SIZE + 1) for part in parts), "operator '~'")
        return str(budget.produced("".join(map(str, parts)), "operator '~'"))


def pass_environment_attr(environment: Any, obj: Any, name: str) -> Any:
    """The ``attr`` filter of expressions (see ``DslEnvironment.getattr``)."""
    return environment.getattr(obj, name)


pass_environment_attr.jinja_pass_arg = _PassArg.environment  # type: ignore[attr-defined]


# ------------------------------------------------------------------ results


def plain_result(value: Any) -> Any:
    """An expression's value as JSON data (lists, dicts, strings, numbers, booleans, null).

    Raises:
        LimitExceeded: the value is bigger than :data:`MAX_RESULT_SIZE` or nested
            deeper than :data:`MAX_VALUE_NESTING`.
        NotData: the value is (or holds) a function, or something that is not data.
        jinja2.UndefinedError: the value is undefined.
    """
    budget = _budget()
    if budget.size(value, MAX_RESULT_SIZE) > MAX_RESULT_SIZE:
        raise LimitExceeded(f"the value is bigger than {MAX_RESULT_SIZE:,} characters")
    return _plain(value, budget, 0)


def _plain(value: Any, budget: _Budget, depth: int) -> Any:
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()  # raises UndefinedError
    if isinstance(value, str):
        return str.__str__(value)  # plain str, also for Jinja's Markup
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        _int_bits(value)
        return int(value)
    if isinstance(value, _Callable):
        raise NotData(f"the value is {value.describe()}, a function, not data")
    if depth >= MAX_VALUE_NESTING:
        raise LimitExceeded(f"a value nested more than {MAX_VALUE_NESTING} levels deep")
    if isinstance(value, (Mapping, Scope)):
        return {_plain_key(key): _plain(item, budget, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple, range, AbstractSet)) or _is_iterator(value) or isinstance(
        value, (type({}.keys()), type({}.values()))
    ):
        plain: list[Any] = []
        for item in value:
            plain.append(_plain(item, budget, depth + 1))
            if len(plain) > MAX_RESULT_SIZE:
                raise LimitExceeded(f"the value is bigger than {MAX_RESULT_SIZE:,} items")
        return plain
    if callable(value):
        raise NotData("the value is a function, not data")
    raise NotData(f"the value is a {type(value).__name__}, not data (JSON: text, numbers, true/false, "
                  "null, lists, mappings)")


def _plain_key(key: Any) -> Any:
    if isinstance(key, str):
        return str.__str__(key)
    if key is None or isinstance(key, (bool, int, float)):
        return key
    raise NotData(f"a mapping key is a {type(key).__name__}, not text")


def _is_iterator(value: Any) -> bool:
    return hasattr(value, "__next__") and hasattr(value, "__iter__")
