"""Timer: START_TIMER, TimerFired, and CANCEL_TIMER (or dropping an unsent start)."""

from __future__ import annotations

from collections.abc import Callable

from spindle._workflow.statemachines._command import CommandEntry, CommandSink
from spindle.api import messages_pb2 as pb

__all__ = ["TimerMachine"]


class TimerMachine:
    """One durable timer. ``fire`` runs when its TimerFired event is applied."""

    def __init__(self, sink: CommandSink, timer_id: str, delay_ms: int, fire: Callable[[], None]) -> None:
        self._sink = sink
        self.timer_id = timer_id
        self._fire = fire
        self.fired = False
        self.cancelled = False
        self._entry = CommandEntry(pb.Command(
            command_type=pb.COMMAND_TYPE_START_TIMER,
            start_timer_command_attributes=pb.StartTimerCommandAttributes(timer_id=timer_id,
                                                                         start_to_fire_timeout_ms=delay_ms),
        ))
        sink.add_command(self._entry)

    def on_fired(self) -> None:
        """Apply TimerFired (ignored when the timer was cancelled)."""
        if self.fired or self.cancelled:
            return
        self.fired = True
        self._fire()

    def cancel(self) -> None:
        """Cancel: drop the unsent START_TIMER, or send CANCEL_TIMER. No-op once fired."""
        if self.fired or self.cancelled:
            return
        self.cancelled = True
        if not self._sink.unsend(self._entry):
            self._sink.add_command(CommandEntry(pb.Command(
                command_type=pb.COMMAND_TYPE_CANCEL_TIMER,
                cancel_timer_command_attributes=pb.CancelTimerCommandAttributes(timer_id=self.timer_id),
            )))
