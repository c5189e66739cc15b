"""Runtime guards: non-deterministic stdlib calls raise when made by workflow code.

:func:`install` (run once when ``spindle.workflow`` is imported) wraps ``time.time``,
``time.time_ns``, ``time.sleep``, the
``random`` module's functions, ``uuid.uuid1``/``uuid.uuid4`` and
``datetime.datetime.now``/``utcnow``/``today`` and ``datetime.date.today``. A wrapper
raises :class:`~spindle.exceptions.WorkflowContextError` only when the running asyncio
loop is a workflow loop *and* its caller is not part of the standard library (so
``logging`` may still stamp records); everywhere else, including activity threads
and the worker's own loop, the original function runs unchanged.

``time.monotonic``, ``time.perf_counter`` (and their ``_ns`` forms) are wrapped too, but
raise only when called by the user's own code: libraries read them at any moment (the
event loop's timers, Spindle's deadlock detection, profilers, timeouts), so callers in the
standard library, in installed packages (``site-packages``) and in Spindle itself run them
unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime
import functools
import gc
import os
import random
import sys
import sysconfig
import time
import uuid

from collections.abc import Callable, Iterator
from typing import Any

from spindle._workflow.loop import WorkflowEventLoop
from spindle.exceptions import WorkflowContextError

__all__ = ["install", "installed", "suspended", "is_suspended"]

_installed = False
_STDLIB_DIRS = tuple({os.path.realpath(p) + os.sep for p in
                      (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"])})


def _caller_is_stdlib(depth: int) -> bool:
    try:
        filename = sys._getframe(depth).f_code.co_filename
    except ValueError:
        return False
    real = os.path.realpath(filename)
    return real.startswith(_STDLIB_DIRS) and "site-packages" not in real and "dist-packages" not in real


_suspended: contextvars.ContextVar[bool] = contextvars.ContextVar("spindle_guard_suspended", default=False)


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Let the guarded functions run (``workflow.side_effect`` runs its function inside this, and
    ``workflow.unsafe.sandbox_unrestricted()`` is this)."""
    token = _suspended.set(True)
    try:
        yield
    finally:
        _suspended.reset(token)


def is_suspended() -> bool:
    """Whether the guards are lifted here (inside :func:`suspended`)."""
    return _suspended.get()


def _caller_is_library(depth: int) -> bool:
    """Whether the caller is the standard library, an installed package or Spindle (not the user's code)."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return False
    module = frame.f_globals.get("__name__", "")
    if module == "spindle" or module.startswith("spindle."):
        return True
    parts = os.path.realpath(frame.f_code.co_filename).split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts or _caller_is_stdlib(depth + 1)


def _check(name: str, alternative: str, libraries_allowed: bool = False) -> None:
    if _suspended.get() or not isinstance(asyncio.events._get_running_loop(), WorkflowEventLoop):
        return
    if not (_caller_is_library(3) if libraries_allowed else _caller_is_stdlib(3)):
        raise WorkflowContextError(
            f"{name} is not deterministic and may not be called in workflow code: use {alternative}")


def _wrap(fn: Callable[..., Any], name: str, alternative: str, libraries_allowed: bool = False) -> Callable[..., Any]:
    if getattr(fn, "__spindle_guarded__", False):
        return fn

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        _check(name, alternative, libraries_allowed)
        return fn(*args, **kwargs)

    guarded.__spindle_guarded__ = True  # type: ignore[attr-defined]
    return guarded


def _patch_type_classmethod(cls: type, attr: str, name: str, alternative: str) -> None:
    """Replace a classmethod of a builtin (immutable) type, e.g. ``datetime.now``."""
    original = cls.__dict__[attr]
    if getattr(original, "__spindle_guarded__", False):
        return

    def method(klass: type, *args: Any, **kwargs: Any) -> Any:
        _check(name, alternative)
        return original.__get__(None, klass)(*args, **kwargs)

    wrapper: Any = classmethod(method)
    wrapper.__spindle_guarded__ = True
    namespace = gc.get_referents(cls.__dict__)[0]
    namespace[attr] = wrapper
    import ctypes

    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


def install() -> None:
    """Install the guards once (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    now_alt = "workflow.now()"
    for attr in ("time", "time_ns"):
        setattr(time, attr, _wrap(getattr(time, attr), f"time.{attr}()", now_alt))
    # Monotonic clocks and perf_counter are read by libraries at any moment (the event loop's
    # timers, deadlock detection, garbage-collector callbacks, profilers, timeouts): only the
    # user's own code is refused them.
    for attr in ("monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns"):
        setattr(time, attr, _wrap(getattr(time, attr), f"time.{attr}()", now_alt, libraries_allowed=True))
    time.sleep = _wrap(time.sleep, "time.sleep()", "await workflow.sleep(...) (a durable timer)")
    for attr in ("random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform",
                 "gauss", "getrandbits", "randbytes", "triangular", "betavariate", "expovariate",
                 "normalvariate", "lognormvariate", "seed"):
        if hasattr(random, attr):
            setattr(random, attr, _wrap(getattr(random, attr), f"random.{attr}()", "workflow.random()"))
    uuid.uuid1 = _wrap(uuid.uuid1, "uuid.uuid1()", "workflow.uuid4()")
    uuid.uuid4 = _wrap(uuid.uuid4, "uuid.uuid4()", "workflow.uuid4()")
    for cls, attr in ((datetime.datetime, "now"), (datetime.datetime, "utcnow"), (datetime.datetime, "today"),
                      (datetime.date, "today")):
        if attr not in cls.__dict__:
            continue
        try:
            _patch_type_classmethod(cls, attr, f"{cls.__name__}.{attr}()", now_alt)
        except Exception:  # not CPython, or a layout we do not know: the static check still flags these
            pass


def installed() -> bool:
    """Whether :func:`install` ran."""
    return _installed
