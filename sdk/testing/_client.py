"""The environment's client: an ordinary :class:`spindle.client.Client` whose handles unlock time skipping.

``sdk/client/_client.py`` has no hook for "a test is waiting for a result", so this module
subclasses :class:`Client` and :class:`WorkflowHandle`: every handle the client makes
is re-classed as a :class:`TimeSkippingHandle`, whose ``result()`` runs inside
``TimeSkipper.awaiting_result()``. ``execute_workflow`` goes through
``start_workflow`` and ``result()``, so it is covered too.
"""

from __future__ import annotations

from typing import Any

from spindle.client import Client, WorkflowHandle
from spindle.testing._time_skipping import TimeSkipper

__all__ = ["TimeSkippingClient", "TimeSkippingHandle"]


class TimeSkippingHandle(WorkflowHandle[Any]):
    """A :class:`WorkflowHandle` whose ``result()`` lets time jump while it waits."""

    _skipper: TimeSkipper

    @classmethod
    def adopt(cls, handle: WorkflowHandle[Any], skipper: TimeSkipper) -> TimeSkippingHandle:
        """Re-class ``handle`` (keeping all its state) so its ``result()`` unlocks skipping."""
        new = cls.__new__(cls)
        new.__dict__.update(handle.__dict__)
        new._skipper = skipper
        return new

    async def result(self, *, follow_runs: bool = True, result_type: Any = None) -> Any:
        """Like :meth:`WorkflowHandle.result`; meanwhile time skips to due timers when all is idle.

        Raises:
            Whatever :meth:`WorkflowHandle.result` raises (``WorkflowFailureError`` ...).
        """
        with self._skipper.awaiting_result():
            return await super().result(follow_runs=follow_runs, result_type=result_type)


class TimeSkippingClient(Client):
    """A :class:`Client` on an in-process control plane whose handles are :class:`TimeSkippingHandle`.

    Construct with the embedded stub and the environment's :class:`TimeSkipper`;
    every other argument is :class:`Client`'s.
    """

    def __init__(self, stub: Any, *, skipper: TimeSkipper, **kwargs: Any) -> None:
        super().__init__(stub, **kwargs)
        self._skipper = skipper

    async def start_workflow(self, workflow: Any, *args: Any, **kwargs: Any) -> WorkflowHandle[Any]:
        """See :meth:`Client.start_workflow`; the handle's ``result()`` unlocks time skipping."""
        handle = await super().start_workflow(workflow, *args, **kwargs)
        return TimeSkippingHandle.adopt(handle, self._skipper)

    def get_workflow_handle(self, workflow_id: str, **kwargs: Any) -> WorkflowHandle[Any]:
        """See :meth:`Client.get_workflow_handle`; the handle's ``result()`` unlocks time skipping."""
        return TimeSkippingHandle.adopt(super().get_workflow_handle(workflow_id, **kwargs), self._skipper)
