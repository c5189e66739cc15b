"""Running SDK coroutines from widget code without freezing the kernel.

SDK objects (a ``Client``, its handles) belong to the event loop they were
created on. A widget therefore remembers that *home loop* and sends every SDK
coroutine there:

- In a notebook the home loop is the kernel's own loop (cells and widget
  callbacks run on it, with top-level ``await``). Widget code never blocks on it:
  work is scheduled as a task and the widget updates when the task finishes.
- In plain (synchronous) Python there is no running loop, so the home loop is a
  single :class:`BackgroundEventLoop`: one daemon thread, like DBOS's
  ``BackgroundEventLoop``. Create the client there (``background().run(
  Client.connect(...))``) and blocking widget calls wait on that thread, never
  on the caller's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["BackgroundEventLoop", "Cancellable", "Runner", "WouldBlockError", "background"]

T = TypeVar("T")


class WouldBlockError(RuntimeError):
    """A blocking call was made on the thread that runs the home loop (it would deadlock)."""


class BackgroundEventLoop:
    """An asyncio loop on one daemon thread, started on first use."""

    def __init__(self, name: str = "spindle-widgets-loop") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (started now if needed)."""
        with self._lock:
            if self._loop is None or self._loop.is_closed() or not self._thread or not self._thread.is_alive():
                ready = threading.Event()
                loop = asyncio.new_event_loop()

                def main() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=main, name=self._name, daemon=True)
                self._loop = loop
                self._thread.start()
                ready.wait()
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the background loop; returns a thread-safe future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the background loop and wait for its result.

        Raises:
            WouldBlockError: called from the background thread itself.
            TimeoutError: ``timeout`` seconds passed (the coroutine is cancelled).
        """
        if threading.current_thread() is self._thread:
            coro.close()
            raise WouldBlockError("BackgroundEventLoop.run() called from its own thread")
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"background call did not finish in {timeout}s") from None

    def stop(self) -> None:
        """Stop the loop and join the thread (pending tasks are cancelled)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(5)
        except Exception:  # noqa: BLE001 - best effort on shutdown
            pass
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


_DEFAULT = BackgroundEventLoop()


def background() -> BackgroundEventLoop:
    """The process-wide background loop the widgets use when no loop runs in the caller's thread."""
    return _DEFAULT


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Cancellable:
    """A scheduled coroutine: ``cancel()`` stops it, ``done()`` says whether it finished."""

    def __init__(self, future: asyncio.Future[Any] | concurrent.futures.Future[Any], loop: asyncio.AbstractEventLoop
                 ) -> None:
        self._future = future
        self._loop = loop

    def cancel(self) -> None:
        """Cancel the coroutine (thread-safe)."""
        if isinstance(self._future, concurrent.futures.Future):
            self._future.cancel()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._future.cancel)

    def done(self) -> bool:
        """True once the coroutine finished, failed or was cancelled."""
        return self._future.done()


class Runner:
    """Sends SDK coroutines to their home loop (see the module docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop or _running_loop() or background().loop

    def _on_home_thread(self) -> bool:
        return _running_loop() is self.loop

    def can_block(self) -> bool:
        """True if :meth:`run_blocking` may be called here (the home loop runs on another thread)."""
        return not self._on_home_thread() and self.loop.is_running()

    def spawn(self, factory: Callable[[], Coroutine[Any, Any, T]],
              on_done: Callable[[T | None, BaseException | None], None] | None = None) -> Cancellable:
        """Run ``factory()`` on the home loop without waiting; ``on_done(result, error)`` follows.

        ``on_done`` runs on the home loop's thread; it is not called when the task is cancelled.
        """
        if self._on_home_thread():
            future: asyncio.Future[Any] | concurrent.futures.Future[Any] = self.loop.create_task(factory())
        else:
            future = asyncio.run_coroutine_threadsafe(factory(), self.loop)

        def finished(f: Any) -> None:
            if on_done is None or f.cancelled():
                return
            error = f.exception()
            on_done(None if error else f.result(), error)

        future.add_done_callback(finished)
        return Cancellable(future, self.loop)

    def run_blocking(self, factory: Callable[[], Coroutine[Any, Any, T]], timeout: float | None = 30.0) -> T:
        """Run ``factory()`` on the home loop and wait for it.

        Raises:
            WouldBlockError: the caller runs on the home loop (use ``await`` instead).
        """
        if self._on_home_thread():
            raise WouldBlockError(
                "this call would block the event loop that runs the SDK client (the notebook kernel's); "
                "use the async form instead, e.g. `await widget.refresh()`")
        future = asyncio.run_coroutine_threadsafe(factory(), self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"SDK call did not finish in {timeout}s") from None

    async def call(self, factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Await ``factory()`` on the home loop from any loop."""
        if self._on_home_thread():
            return await factory()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(factory(), self.loop))

