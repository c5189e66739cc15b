"""Workflow decorators and the frozen :class:`WorkflowDefinition` they attach.

Decorators only *mark*: ``@workflow.defn`` validates the class (or function) and
attaches a :class:`WorkflowDefinition`; registration is explicit, per ``Worker`` /
``Replayer``. Two styles are supported::

    @workflow.defn                     # class style: state + handlers
    class Order:
        @workflow.run
        async def run(self, order: OrderIn) -> str: ...
        @workflow.signal
        def shipped(self, tracking: str) -> None: ...
        @workflow.query
        def status(self) -> str: ...
        @workflow.update
        async def change(self, addr: str) -> str: ...
        @change.validator
        def _check(self, addr: str) -> None: ...

    @workflow.defn(name="approval")     # function style
    async def approval(order_id: str) -> str: ...
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, overload

from spindle.api import messages_pb2 as pb
from spindle.common._versioning import VersioningBehavior

__all__ = [
    "defn",
    "init",
    "run",
    "signal",
    "query",
    "update",
    "WorkflowDefinition",
    "SignalDefinition",
    "QueryDefinition",
    "UpdateDefinition",
    "CallableInfo",
]

_DEFN_ATTR = "__spindle_workflow_definition__"
_RUN_ATTR = "__spindle_workflow_run__"
_INIT_ATTR = "__spindle_workflow_init__"
_SIGNAL_ATTR = "__spindle_signal_definition__"
_QUERY_ATTR = "__spindle_query_definition__"
_UPDATE_ATTR = "__spindle_update_definition__"

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True)
class CallableInfo:
    """A workflow-side callable (run, handler) and its parameter/return type hints.

    ``skip_self`` drops the first parameter (the workflow instance) for methods.
    """

    fn: Callable[..., Any]
    skip_self: bool

    @functools.cached_property
    def _signature(self) -> tuple[list[inspect.Parameter], bool]:
        params = list(inspect.signature(self.fn).parameters.values())
        if self.skip_self and params:
            params = params[1:]
        varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
        positional = [
            p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        ]
        return positional, varargs

    @functools.cached_property
    def _hints(self) -> dict[str, Any]:
        try:
            return typing.get_type_hints(self.fn)
        except Exception:  # unresolvable forward reference: decode those values untyped
            return {}

    @property
    def param_names(self) -> tuple[str, ...]:
        """Names of the positional parameters (without ``self``)."""
        return tuple(p.name for p in self._signature[0])

    @property
    def arg_types(self) -> tuple[Any, ...]:
        """Type hint of each positional parameter (``None`` where there is none)."""
        return tuple(self._hints.get(p.name) for p in self._signature[0])

    @property
    def return_type(self) -> Any:
        """The return type hint, or ``None``."""
        return self._hints.get("return")

    @property
    def is_async(self) -> bool:
        """Whether the callable is an ``async def``."""
        return inspect.iscoroutinefunction(self.fn)

    def decode_args(self, converter: Any, payloads: pb.Payloads | None, what: str) -> list[Any]:
        """Decode ``payloads`` into this callable's positional arguments, by type hint.

        Raises:
            TypeError: too many or too few arguments, or an argument that does not fit
                its parameter's type; the message names ``what`` and the parameter.
        """
        items = list(payloads.payloads) if payloads is not None else []
        params, varargs = self._signature
        hints = self._hints
        if len(items) > len(params) and not varargs:
            raise TypeError(
                f"{what} takes {len(params)} argument(s) ({', '.join(self.param_names) or 'none'}) "
                f"but {len(items)} were given"
            )
        required = [p for p in params if p.default is inspect.Parameter.empty]
        if len(items) < len(required):
            missing = required[len(items)]
            raise TypeError(f"{what}: missing argument for parameter {missing.name!r} (got {len(items)} argument(s))")
        out: list[Any] = []
        for i, payload in enumerate(items):
            name = params[i].name if i < len(params) else f"*args[{i - len(params)}]"
            hint = hints.get(params[i].name) if i < len(params) else None
            try:
                out.append(converter.from_payload(payload, hint))
            except Exception as e:
                raise TypeError(f"{what}: argument {i + 1} for parameter {name!r} cannot be decoded: {e}") from e
        return out


@dataclasses.dataclass(frozen=True)
class SignalDefinition:
    """A signal handler: ``name`` on the wire, the handler and its hints."""

    name: str
    handler: CallableInfo


@dataclasses.dataclass(frozen=True)
class QueryDefinition:
    """A query handler (synchronous; it must not issue commands)."""

    name: str
    handler: CallableInfo


@dataclasses.dataclass(frozen=True)
class UpdateDefinition:
    """An update handler and its optional synchronous validator."""

    name: str
    handler: CallableInfo
    validator: CallableInfo | None = None


@dataclasses.dataclass(frozen=True)
class WorkflowDefinition:
    """Everything the runtime needs to run one workflow type.

    ``cls`` is the workflow class (``None`` for function style); ``run`` is the run
    method (unbound) or the function; ``signals``/``queries``/``updates`` map wire names
    to handlers. ``init_takes_args``: the class's ``__init__`` is ``@workflow.init`` and
    receives the run method's arguments. ``versioning_behavior``: what a versioned worker
    declares for its executions (worker build versioning). ``failure_exception_types``:
    exceptions of these types raised by the workflow's code fail the workflow, not its task.
    """

    name: str
    cls: type | None
    run: CallableInfo
    signals: Mapping[str, SignalDefinition]
    queries: Mapping[str, QueryDefinition]
    updates: Mapping[str, UpdateDefinition]
    check_determinism: bool = True
    target: Any = None
    init_takes_args: bool = False
    versioning_behavior: VersioningBehavior = VersioningBehavior.UNSPECIFIED
    failure_exception_types: tuple[type[BaseException], ...] = ()

    @property
    def arg_types(self) -> tuple[Any, ...]:
        """Type hints of the run function's positional parameters."""
        return self.run.arg_types

    @property
    def return_type(self) -> Any:
        """The run function's return type hint (``None`` if absent)."""
        return self.run.return_type

    @staticmethod
    def from_target(target: Any) -> WorkflowDefinition:
        """The definition attached to a ``@workflow.defn`` class or function, or to its run method.

        Raises:
            TypeError: ``target`` is not decorated with ``@workflow.defn``.
        """
        if isinstance(target, WorkflowDefinition):
            return target
        d = getattr(target, _DEFN_ATTR, None)
        if isinstance(d, WorkflowDefinition):
            return d
        name = getattr(target, "__qualname__", None) or repr(target)
        if getattr(target, _RUN_ATTR, False):
            raise TypeError(
                f"{name} is marked @workflow.run but its class is not decorated with @workflow.defn"
            )
        raise TypeError(
            f"{name} is not a workflow: decorate the class (with an @workflow.run method) or the "
            "async function with @workflow.defn"
        )

    @staticmethod
    def get(target: Any) -> WorkflowDefinition | None:
        """Like :meth:`from_target` but returns ``None`` for an undecorated target."""
        d = getattr(target, _DEFN_ATTR, None)
        return d if isinstance(d, WorkflowDefinition) else None


# --------------------------------------------------------------------------- decorators


@overload
def defn(target: T, /) -> T: ...
@overload
def defn(*, name: str | None = None, check_determinism: bool = True,
         versioning_behavior: VersioningBehavior = VersioningBehavior.UNSPECIFIED) -> Callable[[T], T]: ...


def defn(target: Any = None, /, *, name: str | None = None, check_determinism: bool = True,
         versioning_behavior: VersioningBehavior = VersioningBehavior.UNSPECIFIED,
         failure_exception_types: Sequence[type[BaseException]] = ()) -> Any:
    """Mark a class (with one ``@workflow.run`` method) or an ``async def`` as a workflow.

    ``name`` is the workflow type name (default: the class or function name).
    ``check_determinism=False`` opts out of the static determinism check the worker
    runs at start. ``versioning_behavior`` (temporalio's parameter): on a worker with
    ``WorkerDeploymentConfig(use_worker_versioning=True)``, ``PINNED`` keeps each execution
    on the build that started it, ``AUTO_UPGRADE`` moves it to the deployment's current
    version; ``UNSPECIFIED`` takes the worker's default (none: the worker refuses the workflow).
    ``failure_exception_types`` (temporalio's parameter): an exception of one of these types
    (or a subclass) raised by the run method or a signal or update handler fails the workflow
    execution, as a :class:`~spindle.exceptions.FailureError` does, instead of failing the
    workflow task (which retries it); ``[Exception]`` fails the workflow on any error.

    Raises:
        TypeError: at decoration time, for a class without exactly one async
            ``@workflow.run`` method, a synchronous function, an async query handler,
            two handlers with the same name, or an ``@workflow.init`` ``__init__`` whose
            parameters differ from the run method's.
        ValueError: ``versioning_behavior`` is not a :class:`~spindle.common.VersioningBehavior` value.
        TypeError: an entry of ``failure_exception_types`` is not an exception class.
    """

    behavior = VersioningBehavior(versioning_behavior)
    failure_types = tuple(failure_exception_types)
    for ft in failure_types:
        if not (isinstance(ft, type) and issubclass(ft, BaseException)):
            raise TypeError(f"@workflow.defn failure_exception_types: {ft!r} is not an exception class")

    def decorate(t: Any) -> Any:
        if inspect.isclass(t):
            d = dataclasses.replace(_class_definition(t, name or t.__name__, check_determinism),
                                    versioning_behavior=behavior, failure_exception_types=failure_types)
            setattr(d.run.fn, _DEFN_ATTR, d)
        elif inspect.isfunction(t):
            if not inspect.iscoroutinefunction(t):
                raise TypeError(f"@workflow.defn function {t.__qualname__} must be 'async def'")
            d = WorkflowDefinition(
                name=name or t.__name__,
                cls=None,
                run=CallableInfo(t, skip_self=False),
                signals={},
                queries={},
                updates={},
                check_determinism=check_determinism,
                target=t,
                versioning_behavior=behavior,
                failure_exception_types=failure_types,
            )
        else:
            raise TypeError(f"@workflow.defn applies to a class or an async function, not {t!r}")
        setattr(t, _DEFN_ATTR, d)
        return t

    if target is not None:
        return decorate(target)
    return decorate


def _class_definition(cls: type, name: str, check_determinism: bool) -> WorkflowDefinition:
    run_fns: list[Callable[..., Any]] = []
    signals: dict[str, SignalDefinition] = {}
    queries: dict[str, QueryDefinition] = {}
    updates: dict[str, UpdateDefinition] = {}
    seen: set[str] = set()
    for klass in cls.__mro__:
        for attr, member in vars(klass).items():
            if attr in seen:
                continue
            seen.add(attr)
            if getattr(member, _RUN_ATTR, False):
                run_fns.append(member)
            if (s := getattr(member, _SIGNAL_ATTR, None)) is not None:
                _add_unique(signals, s.name, s, cls, "signal")
            if (q := getattr(member, _QUERY_ATTR, None)) is not None:
                _add_unique(queries, q.name, q, cls, "query")
            if (u := getattr(member, _UPDATE_ATTR, None)) is not None:
                v = getattr(member, "_spindle_validator", None)
                u = dataclasses.replace(u, validator=CallableInfo(v, skip_self=True) if v else None)
                _add_unique(updates, u.name, u, cls, "update")
    if len(run_fns) != 1:
        found = ", ".join(f.__name__ for f in run_fns) or "none"
        raise TypeError(f"@workflow.defn class {cls.__qualname__} needs exactly one @workflow.run method (found: {found})")
    init = getattr(cls, "__init__")  # noqa: B009 - the class attribute, not an instance's
    init_takes_args = getattr(init, _INIT_ATTR, False)
    if init_takes_args:
        _check_init_matches_run(cls, init, run_fns[0])
    return WorkflowDefinition(
        name=name,
        cls=cls,
        run=CallableInfo(run_fns[0], skip_self=True),
        signals=signals,
        queries=queries,
        updates=updates,
        check_determinism=check_determinism,
        target=cls,
        init_takes_args=init_takes_args,
    )


def _check_init_matches_run(cls: type, init_fn: Callable[..., Any], run_fn: Callable[..., Any]) -> None:
    """``@workflow.init`` and ``@workflow.run`` must take the same parameters (names aside), as in Temporal."""

    def unnamed(fn: Callable[..., Any]) -> list[inspect.Parameter]:
        return [p.replace(name="_") for p in inspect.signature(fn).parameters.values()]

    if unnamed(init_fn) != unnamed(run_fn):
        raise TypeError(
            f"@workflow.init {cls.__qualname__}.__init__{inspect.signature(init_fn)} and @workflow.run "
            f"{run_fn.__qualname__}{inspect.signature(run_fn)} must take the same parameters (kinds, defaults "
            "and type hints; only the names may differ): __init__ receives the workflow's arguments")


def _add_unique(d: dict[str, Any], key: str, value: Any, cls: type, kind: str) -> None:
    if key in d:
        raise TypeError(f"workflow {cls.__qualname__} has two {kind} handlers named {key!r}")
    d[key] = value


def init(fn: F) -> F:
    """Mark a workflow class's ``__init__`` as taking the workflow's arguments.

    The instance is then created with the same arguments as the ``@workflow.run``
    method, before the run method (or any signal or update handler) is called, so
    handlers can rely on state built from the input. Without ``@workflow.init``,
    ``__init__`` is called with no arguments. Its parameters must equal the run
    method's (kinds, defaults and type hints; names may differ): ``@workflow.defn``
    checks that.

    Raises:
        TypeError: the decorated function is not named ``__init__``.
    """
    if getattr(fn, "__name__", None) != "__init__":
        raise TypeError(f"@workflow.init may only decorate __init__, not {getattr(fn, '__qualname__', fn)!r}")
    setattr(fn, _INIT_ATTR, True)
    return fn


def run(fn: F) -> F:
    """Mark the ``async def`` method that runs the workflow (exactly one per class).

    Raises:
        TypeError: the method is not ``async def``.
    """
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"@workflow.run method {fn.__qualname__} must be 'async def'")
    setattr(fn, _RUN_ATTR, True)
    return fn


def _handler_decorator(
    target: Any, name: str | None, attach: Callable[[Callable[..., Any], str], None]
) -> Any:
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise TypeError(f"workflow handler decorators apply to methods, not {fn!r}")
        attach(fn, name or fn.__name__)
        return fn

    if target is not None:
        return decorate(target)
    return decorate


@overload
def signal(fn: F, /) -> F: ...
@overload
def signal(*, name: str | None = None) -> Callable[[F], F]: ...


def signal(fn: Any = None, /, *, name: str | None = None) -> Any:
    """Mark a method (``def`` or ``async def``) as the handler of signal ``name`` (default: its name)."""

    def attach(f: Callable[..., Any], n: str) -> None:
        setattr(f, _SIGNAL_ATTR, SignalDefinition(n, CallableInfo(f, skip_self=True)))

    return _handler_decorator(fn, name, attach)


@overload
def query(fn: F, /) -> F: ...
@overload
def query(*, name: str | None = None) -> Callable[[F], F]: ...


def query(fn: Any = None, /, *, name: str | None = None) -> Any:
    """Mark a synchronous method as the handler of query ``name`` (default: its name).

    Raises:
        TypeError: the method is ``async def`` (queries must answer without waiting).
    """

    def attach(f: Callable[..., Any], n: str) -> None:
        if inspect.iscoroutinefunction(f):
            raise TypeError(f"@workflow.query handler {f.__qualname__} must be a plain 'def', not 'async def'")
        setattr(f, _QUERY_ATTR, QueryDefinition(n, CallableInfo(f, skip_self=True)))

    return _handler_decorator(fn, name, attach)


@overload
def update(fn: F, /) -> F: ...
@overload
def update(*, name: str | None = None) -> Callable[[F], F]: ...


def update(fn: Any = None, /, *, name: str | None = None) -> Any:
    """Mark a method as the handler of update ``name`` (default: its name).

    The decorated method gets a ``.validator`` decorator: the validator is a plain
    ``def`` with the same parameters that raises to reject the update before it is
    accepted (it must not change state or issue commands).
    """

    def attach(f: Callable[..., Any], n: str) -> None:
        setattr(f, _UPDATE_ATTR, UpdateDefinition(n, CallableInfo(f, skip_self=True)))

        def validator(v: Callable[..., Any]) -> Callable[..., Any]:
            if inspect.iscoroutinefunction(v):
                raise TypeError(f"update validator {v.__qualname__} must be a plain 'def', not 'async def'")
            f._spindle_validator = v  # type: ignore[attr-defined]
            return v

        f.validator = validator  # type: ignore[attr-defined]

    return _handler_decorator(fn, name, attach)


def handler_name(fn_or_name: Any, attr: str = _SIGNAL_ATTR) -> str:
    """The wire name of a signal/query/update given its decorated method or a plain name."""
    if isinstance(fn_or_name, str):
        return fn_or_name
    for a in (attr, _SIGNAL_ATTR, _QUERY_ATTR, _UPDATE_ATTR):
        d = getattr(fn_or_name, a, None)
        if d is not None:
            return str(d.name)
    name = getattr(fn_or_name, "__name__", None)
    if name is None:
        raise TypeError(f"expected a handler name or a decorated method, got {fn_or_name!r}")
    return str(name)


def workflow_type_name(target: Any) -> str:
    """The workflow type name of a definition, decorated class/function/run method, or a str."""
    if isinstance(target, str):
        return target
    return WorkflowDefinition.from_target(target).name


