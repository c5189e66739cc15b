"""Deadlock detection: workflow code that does not yield within a deadline is interrupted.

Workflow activations run synchronously on the worker's event loop thread, so a
workflow that never yields (``while True: pass``) would freeze the whole worker: no
polls, no heartbeats, no other workflows. :class:`ActivationWatchdog` guards each
activation (and query, and eviction) that the worker runs:

* the hot path is cheap: arming writes a sequence number and a timestamp; disarming
  takes an uncontended lock and reads a flag. One daemon thread per worker sleeps
  until the current activation's deadline.
* when an activation passes its deadline, the watchdog records a stack snapshot of
  the stuck code and marks the activation *overdue*: whatever the activation does
  afterwards, its workflow task fails with :class:`DeadlockError`
  (Temporal's "[TMPRL1101] Potential deadlock detected") and the worker evicts the
  instance (its state is never reused).
* to give the thread back, the watchdog raises :class:`DeadlockInterrupt` (a
  ``BaseException``, so ``except Exception`` in workflow code does not swallow it)
  in the activation's thread with ``PyThreadState_SetAsyncExc``. It only does so
  while the thread is executing workflow code (its innermost frame is neither in the
  standard library nor in Spindle's runtime), so the interrupt never lands inside a
  lock held by ``logging``/``threading`` or inside the runtime's bookkeeping, and
  it repeats the interrupt while the activation has not ended (code that catches
  ``BaseException`` and spins again).

Limits (the same as every in-process Python interruption, Temporal's included): an
asynchronous exception is raised only between bytecodes, so a single C-level call
(a huge ``re`` match, ``sum(range(10**12))``, a blocking socket read, ``lock.acquire()``)
is interrupted only when it returns; until then the worker stays blocked and the
watchdog logs the stuck stack once, at the deadline. Deadlock detection is off with
``Worker(debug_mode=True)`` (for stepping through workflow code in a debugger).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import sysconfig
import threading
import time
import traceback

from collections.abc import Callable
from types import CodeType
from typing import Any, TypeVar

__all__ = ["ActivationWatchdog", "DeadlockError", "DeadlockInterrupt", "deadlock_message"]

log = logging.getLogger("spindle.worker")
T = TypeVar("T")

#: After an interrupt, how long the watchdog waits for the activation to end before interrupting again.
_REINTERRUPT_AFTER = 0.05
#: How often an overdue activation that is not in workflow code (a C call, the stdlib) is looked at again.
_RETRY_INTERVAL = 0.005
#: Frames kept in the stack snapshot of a deadlocked activation.
_STACK_LIMIT = 40

_SetAsyncExc = ctypes.pythonapi.PyThreadState_SetAsyncExc


def _raise_in(thread_id: int) -> None:
    _SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(DeadlockInterrupt))


def _clear_pending(thread_id: int) -> None:
    _SetAsyncExc(ctypes.c_ulong(thread_id), None)  # NULL: drop a pending asynchronous exception

_STDLIB_DIRS = tuple({os.path.realpath(p) + os.sep for p in
                      (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"])})
# The spindle package (this module is in spindle/_workflow/): the SDK's own code is not workflow code.
_SPINDLE_DIR = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
# Workflow code that Spindle itself provides (the DSL interpreter) may be interrupted like user code.
_SPINDLE_WORKFLOW_DIRS = (_SPINDLE_DIR + "dsl" + os.sep,)


class DeadlockInterrupt(BaseException):
    """Raised inside workflow code that overran the deadline (never reaches the server or the user)."""


class DeadlockError(RuntimeError):
    """A workflow activation did not yield within the deadlock detection timeout.

    The worker fails the workflow task with it (cause ``WORKFLOW_WORKER_UNHANDLED_FAILURE``),
    so it appears in the history as ``WorkflowTaskFailed``; its ``stack_trace`` is where
    the workflow code was when the deadline passed. The server retries the task with
    backoff; fix the code (or raise the timeout) and the retry completes.
    """

    def __init__(self, message: str, stack_trace: str = "") -> None:
        super().__init__(message)
        #: Where the workflow code was when the deadline passed (read by the failure converter).
        self.stack_trace = stack_trace


def deadlock_message(timeout: float, what: str) -> str:
    """Temporal's wording, naming the workflow: ``[TMPRL1101] Potential deadlock detected: ...``."""
    return (f"[TMPRL1101] Potential deadlock detected: {what} didn't yield within {timeout:g} second(s); "
            "workflow code must not block or loop without awaiting (do blocking work in an activity)")


_interruptible_cache: dict[CodeType, bool] = {}


def _is_workflow_code(code: CodeType) -> bool:
    """Whether interrupting a frame running ``code`` can only hurt the (evicted) workflow instance."""
    known = _interruptible_cache.get(code)
    if known is not None:
        return known
    filename = code.co_filename
    if filename.startswith("<"):
        ok = not filename.startswith("<frozen")  # exec'd or generated code (cattrs hooks); not importlib
    else:
        real = os.path.realpath(filename)
        in_stdlib = real.startswith(_STDLIB_DIRS) and "site-packages" not in real and "dist-packages" not in real
        in_runtime = real.startswith(_SPINDLE_DIR) and not real.startswith(_SPINDLE_WORKFLOW_DIRS)
        ok = not in_stdlib and not in_runtime
    if len(_interruptible_cache) > 10_000:
        _interruptible_cache.clear()
    _interruptible_cache[code] = ok
    return ok


class ActivationWatchdog:
    """Interrupts workflow code on one thread that runs longer than ``timeout`` seconds without yielding.

    Use :meth:`run` around every synchronous call into workflow code; :meth:`touch`
    restarts the clock (the runtime calls it at each replayed workflow task, so a long
    history replays in many short activations, as in Temporal). Not reentrant: one
    guarded call at a time, from the thread that called :meth:`start`.
    """

    def __init__(self, timeout: float) -> None:
        if timeout <= 0:
            raise ValueError(f"the deadlock detection timeout must be positive, got {timeout}")
        self.timeout = float(timeout)
        self._lock = threading.Lock()
        self._seq = 0              # the current (or last) guarded call; written by the guarded thread
        self._started = 0.0        # monotonic start of the current guarded call, 0.0 when idle
        self._overdue_seq = 0      # the guarded call that passed its deadline
        self._interrupted_at = 0.0
        self._stack = ""
        self._target = 0           # thread ident of the guarded thread
        self._what: Callable[[], str] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Guard calls made from the current thread; starts the watchdog thread (idempotent)."""
        self._target = threading.get_ident()
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._watch, name="spindle-deadlock-watchdog", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the watchdog thread (guarded calls after this are not watched)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)

    # ------------------------------------------------------------------ the guarded thread

    def run(self, what: Callable[[], str], fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call ``fn(*args, **kwargs)``; if it overran the deadline raise :class:`DeadlockError` instead of its outcome.

        ``what()`` names the guarded code in the error (e.g. ``"workflow OrderWorkflow
        (id order-1, ...)"``); it is called only for a deadlock. ``KeyboardInterrupt`` and
        ``SystemExit`` always propagate.

        Raises:
            DeadlockError: the call did not return within ``timeout`` seconds.
            BaseException: whatever ``fn`` raised, when it returned in time.
        """
        if self._thread is None:
            return fn(*args, **kwargs)
        self._what = what
        self._seq = seq = self._seq + 1
        self._started = time.monotonic()
        error: BaseException | None = None
        result: Any = None
        try:
            try:
                result = fn(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001 - re-raised below unless the deadline passed
                error = e
            stack = self._disarm(seq)
        except DeadlockInterrupt:  # an interrupt still pending when fn returned, delivered just now
            stack = self._disarm(seq)
        if stack is not None:
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise error
            raise DeadlockError(deadlock_message(self.timeout, what()), stack) from None
        if error is not None:
            raise error
        return result

    def touch(self) -> None:
        """Restart the current guarded call's clock (a new workflow task began during a replay)."""
        if self._started:
            self._started = time.monotonic()

    def _disarm(self, seq: int) -> str | None:
        """End guarded call ``seq``; its stack snapshot if it overran, else ``None``. Nothing is pending after."""
        with self._lock:
            self._started = 0.0
            if self._overdue_seq != seq:
                return None
            # An interrupt may still be pending (set while fn was in a C call): drop it.
            _clear_pending(self._target)
            return self._stack

    # ------------------------------------------------------------------ the watchdog thread

    def _watch(self) -> None:
        stop = self._stop
        while not stop.is_set():
            started, seq = self._started, self._seq
            if not started:
                stop.wait(self.timeout)
                continue
            if self._overdue_seq == seq:
                self._interrupt(seq)
                stop.wait(_RETRY_INTERVAL)
                continue
            remaining = started + self.timeout - time.monotonic()
            if remaining > 0:
                stop.wait(remaining)
                continue
            self._interrupt(seq)
            stop.wait(_RETRY_INTERVAL)

    def _interrupt(self, seq: int) -> None:
        report = ""
        with self._lock:
            if self._seq != seq or not self._started:
                return  # the call ended meanwhile
            now = time.monotonic()
            if self._overdue_seq != seq:
                if now - self._started < self.timeout:
                    return  # touched meanwhile (a new replayed workflow task)
                self._overdue_seq = seq
                self._interrupted_at = 0.0
                self._stack = self._snapshot()
                report = deadlock_message(self.timeout, self._describe()) + "; stuck at:\n" + self._stack
            elif now - self._interrupted_at < _REINTERRUPT_AFTER:
                return
            self._interrupt_at_workflow_code(now)
        if report:
            log.warning("%s", report)

    def _interrupt_at_workflow_code(self, now: float) -> None:
        """Raise the interrupt if the guarded thread is paused in workflow code (else try again later).

        The thread is paused while this thread holds the GIL, and an asynchronous exception
        is raised as soon as it runs again, in the frame it is paused in. The frame is read
        twice around the (possibly GIL-releasing) check; if the thread moved in between,
        nothing is raised this time.
        """
        frame = sys._current_frames().get(self._target)
        if frame is None or not _is_workflow_code(frame.f_code):
            return
        lasti = frame.f_lasti
        again = sys._current_frames().get(self._target)
        if again is not frame or again.f_lasti != lasti:
            return
        self._interrupted_at = now
        _raise_in(self._target)

    def _snapshot(self) -> str:
        frame = sys._current_frames().get(self._target)
        if frame is None:
            return ""
        return "".join(traceback.format_stack(frame, limit=_STACK_LIMIT))

    def _describe(self) -> str:
        what = self._what
        try:
            return what() if what is not None else "workflow code"
        except Exception:  # naming must never break the watchdog
            return "workflow code"
