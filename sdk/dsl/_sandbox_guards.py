"""What calls expressions make may do: the allow-list of methods, and the guards of
methods, filters and tests.

A method call is allowed only if its name is on the list for its owner's type
(:func:`method_allowed`); an allowed method whose result would be too big is refused
before it runs (:func:`method_precheck`). Every filter and test is wrapped
(:func:`guard_filter`, :func:`guard_test`) so that it is charged to the evaluation's
budget and, for filters that can make big values, refused before it runs.
"""

from __future__ import annotations

import functools
import inspect

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jinja2.runtime import Context
from jinja2.utils import _PassArg, pass_context

from spindle.dsl._sandbox_budget import Budget, current_budget
from spindle.dsl._sandbox_estimates import (
    format_estimate,
    join_estimate,
    materialise,
    printf_estimate,
    replace_estimate,
)
from spindle.dsl._sandbox_limits import (
    MAX_BATCH,
    MAX_JSON_INDENT,
    MAX_VALUE_SIZE,
    LimitExceeded,
    check_total,
    check_width,
)
from spindle.dsl._sandbox_scope import Scope

__all__ = ["guard_filter", "guard_test", "method_allowed", "method_precheck"]

#: Methods expressions may call, by the type they belong to (everything else is refused).
_STR_METHODS = frozenset(
    "capitalize casefold center count endswith find format format_map index isalnum isalpha "
    "isdecimal isdigit isidentifier islower isnumeric isspace istitle isupper join ljust lower "
    "lstrip partition removeprefix removesuffix replace rfind rindex rjust rpartition rsplit "
    "rstrip split splitlines startswith strip swapcase title upper zfill".split()
)
_SEQUENCE_METHODS = frozenset({"count", "index"})
_MAPPING_METHODS = frozenset({"get", "items", "keys", "values"})

#: Filters that turn a whole value into text.
_TEXT_FILTERS = ("string", "pprint", "tojson", "escape", "e", "forceescape", "urlencode", "xmlattr")


# ------------------------------------------------------------------ methods


def method_allowed(owner: Any, name: str) -> bool:
    """Whether expressions may call method ``name`` of ``owner``."""
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


def method_precheck(owner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                    budget: Budget) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Refuse (before it runs) a method call whose result would be too big."""
    what = f"{type(owner).__name__}.{name}()"
    if not isinstance(owner, str):
        return args, kwargs
    if name in ("center", "ljust", "rjust", "zfill"):
        check_width(_argument(args, kwargs, 0, "width", 0), what)
    elif name == "replace":
        old, new = _argument(args, kwargs, 0, "old", ""), _argument(args, kwargs, 1, "new", "")
        if isinstance(old, str) and isinstance(new, str):
            check_total(replace_estimate(owner, old, new, _argument(args, kwargs, 2, "count", -1)), what)
    elif name == "join" and args:
        items = materialise(args[0], budget, what)
        check_total(join_estimate(owner, items, budget), what)
        args = (items, *args[1:])
    elif name == "format":
        check_total(format_estimate(owner, args, kwargs, budget), what)
    elif name == "format_map" and args:
        mapping = args[0]
        values = [value for _, value in mapping.items()] if isinstance(mapping, (Mapping, Scope)) else [mapping]
        check_total(format_estimate(owner, values, {}, budget), what)
    return args, kwargs


# ------------------------------------------------------------------ filters and tests


def _filter_precheck(name: str, bound: dict[str, Any], budget: Budget) -> None:
    """Refuse (before it runs) a filter call whose result would be too big."""
    what = f"filter {name!r}"
    if name == "center":
        check_width(bound.get("width"), what)
    elif name == "indent":
        text, width = str(bound.get("s", "")), bound.get("width", 4)
        pad = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
        check_total(len(text) + (text.count("\n") + 1) * max(0, pad), what)
    elif name == "wordwrap":
        text, wrap = str(bound.get("s", "")), bound.get("wrapstring")
        check_total(len(text) * (1 + (len(wrap) if isinstance(wrap, str) else 1)), what)
    elif name == "replace":
        source, old, new = bound.get("s"), bound.get("old"), bound.get("new")
        if isinstance(source, str) and isinstance(old, str) and isinstance(new, str):
            check_total(replace_estimate(source, old, new, bound.get("count")), what)
    elif name == "format":
        template = bound.get("value")
        if isinstance(template, str):
            values = bound.get("kwargs") or bound.get("args") or ()
            check_total(printf_estimate(template, values, budget), what)
    elif name in ("batch", "slice"):
        count = bound.get("linecount", bound.get("slices"))
        if isinstance(count, int) and count > MAX_BATCH:
            raise LimitExceeded(f"{what} count {count:,} is over {MAX_BATCH:,}")
    if name in _TEXT_FILTERS:  # the text is at least as long as the value it is made of
        check_total(budget.size(bound.get("value", bound.get("s")), MAX_VALUE_SIZE + 1), what)
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


def guard_filter(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
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
        budget = current_budget()
        what = f"filter {name!r}"
        if checked:
            bound = _bind(signature, args, kwargs)
            if name == "join" and args:
                items = materialise(args[0], budget, what)
                separator = bound.get("d", "")
                if isinstance(separator, str):
                    if bound.get("attribute") is None:
                        check_total(join_estimate(separator, items, budget), what)
                    else:  # only the attribute is joined: the separators are what can be big
                        check_total(len(separator) * max(0, len(items) - 1), what)
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


def guard_test(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    pass_arg = _PassArg.from_obj(original)

    @pass_context
    @functools.wraps(original)
    def guarded(context: Context, *args: Any, **kwargs: Any) -> Any:
        current_budget().charge(1 + sum(len(a) for a in args if isinstance(a, str)), f"test {name!r}")
        if pass_arg is _PassArg.context:
            return original(context, *args, **kwargs)
        if pass_arg is _PassArg.eval_context:
            return original(context.eval_ctx, *args, **kwargs)
        if pass_arg is _PassArg.environment:
            return original(context.environment, *args, **kwargs)
        return original(*args, **kwargs)

    return guarded
