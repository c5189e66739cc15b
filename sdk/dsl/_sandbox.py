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

The sandbox is this module and the modules it is built from (each imports only those
listed before it):

* ``_sandbox_limits``: the limits (``MAX_*``), :class:`LimitExceeded` and :class:`NotData`,
  and the checks made before an operation allocates.
* ``_sandbox_scope``: :class:`Scope`.
* ``_sandbox_budget``: the work budget of one evaluation (:func:`evaluation`) and the
  size of a value.
* ``_sandbox_estimates``: upper bounds of the size of a result, before it is made.
* ``_sandbox_guards``: the allow-list of methods, and the guards of method, filter and
  test calls.
* here: :class:`DslEnvironment`, functions as values (:class:`_Callable`) and
  :func:`plain_result`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import jinja2

from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment, safe_range
from jinja2.utils import _PassArg

from spindle.dsl._sandbox_budget import Budget, current_budget, evaluation
from spindle.dsl._sandbox_estimates import printf_estimate
from spindle.dsl._sandbox_guards import guard_filter, guard_test, method_allowed, method_precheck
from spindle.dsl._sandbox_limits import (
    MAX_BATCH,
    MAX_INT_BITS,
    MAX_JSON_INDENT,
    MAX_RESULT_SIZE,
    MAX_VALUE_NESTING,
    MAX_VALUE_SIZE,
    MAX_WORK,
    LimitExceeded,
    NotData,
    check_total,
    int_bits,
)
from spindle.dsl._sandbox_scope import Scope

__all__ = [
    "MAX_BATCH",
    "MAX_INT_BITS",
    "MAX_JSON_INDENT",
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

_REMOVED_GLOBALS = ("lipsum", "cycler", "joiner", "namespace")
_REMOVED_FILTERS = ("random",)


# ------------------------------------------------------------------ callables


class _Callable:
    """A function or method read by an expression: callable, but not data.

    Turning it into text (``~``, ``%``, ``format``, ``string``, ...) or
    returning it raises :class:`NotData`, so no address or internal name leaks
    and a result is always data.

    It is defined here, next to the environment that makes and calls it: Jinja's
    messages name its class (``'spindle.dsl._sandbox._Callable object' has no
    attribute 'x'``), and moving it would change them.
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
        self.filters = {name: guard_filter(name, fn) for name, fn in self.filters.items()}
        tests: dict[str, Any] = dict(self.tests)  # typeshed: "function"; any callable will do
        self.tests = {name: guard_test(name, fn) for name, fn in tests.items()}

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
        budget = current_budget()
        what = f"{__obj.describe()}()"
        if __obj.owner is not None:
            if not method_allowed(__obj.owner, __obj.name):
                raise NotData(f"{__obj.describe()} is not available in expressions")
            args, kwargs = method_precheck(__obj.owner, __obj.name, args, kwargs, budget)
        budget.charge(1 + sum(len(a) for a in args if isinstance(a, str)), what)
        result = super().call(__context, __obj.target, *args, **kwargs)
        return budget.produced(result, what)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        """An arithmetic operator, refused before it runs if its result would be too big."""
        budget = current_budget()
        what = f"operator {operator!r}"
        if operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
            if abs(left) > 1 and (abs(left).bit_length() - 1) * right > MAX_INT_BITS:
                raise LimitExceeded(f"{what}: the result would have more than {MAX_INT_BITS} bits")
        elif operator == "*":
            for sequence, count in ((left, right), (right, left)):
                if isinstance(sequence, (str, list, tuple)) and isinstance(count, int) and count > 0:
                    check_total(len(sequence) * count, what)
        elif operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
            check_total(len(left) + len(right), what)
        elif operator == "%" and isinstance(left, str):
            check_total(printf_estimate(left, right, budget), what)
        return budget.produced(self.binop_table[operator](left, right), what)

    def dsl_concat(self, parts: tuple[Any, ...]) -> str:
        """``a ~ b ~ c``: text of the parts, joined."""
        budget = current_budget()
        check_total(sum(budget.size(part, MAX_VALUE_SIZE + 1) for part in parts), "operator '~'")
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
    budget = current_budget()
    if budget.size(value, MAX_RESULT_SIZE) > MAX_RESULT_SIZE:
        raise LimitExceeded(f"the value is bigger than {MAX_RESULT_SIZE:,} characters")
    return _plain(value, budget, 0)


def _plain(value: Any, budget: Budget, depth: int) -> Any:
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()  # raises UndefinedError
    if isinstance(value, str):
        return str.__str__(value)  # plain str, also for Jinja's Markup
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        int_bits(value)
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
