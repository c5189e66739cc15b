"""Temporal's ``arg=`` / ``args=[...]`` keywords next to Spindle's positional arguments, as one tuple.

``client.start_workflow(W.run, arg=x)``, ``start_workflow(W.run, args=[x, y])`` and
``start_workflow(W.run, x, y)`` send the same arguments; giving more than one form is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

__all__ = ["ARG_UNSET", "call_args"]


class _ArgUnset:
    def __repr__(self) -> str:
        return "<arg not given>"


ARG_UNSET: Final[Any] = _ArgUnset()
"""The default of ``arg=``: no single argument given (``None`` is a valid argument)."""


def call_args(what: str, positional: Sequence[Any], arg: Any, args: Sequence[Any]) -> tuple[Any, ...]:
    """The arguments of ``what`` from its positional arguments, ``arg=`` or ``args=[...]`` (at most one form).

    Raises:
        ValueError: both ``arg`` and ``args`` are given (temporalio's message), or either with positional arguments.
        TypeError: ``args`` is a str, bytes or not a sequence.
    """
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        raise TypeError(f"{what}: args must be a sequence (list or tuple) of arguments, got {type(args).__name__}")
    if arg is not ARG_UNSET:
        if args:
            raise ValueError("Cannot have arg and args")
        args = (arg,)
    if positional and (args or arg is not ARG_UNSET):
        raise ValueError(f"{what}: pass the arguments either positionally or as args=[...] (or arg=), not both")
    return tuple(positional) if positional else tuple(args)
