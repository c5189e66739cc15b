"""Page tokens of the list and history APIs: an integer position (offset or first event id) as ASCII."""

from __future__ import annotations

from spindle.controlplane.errors import InvalidArgument


def token_position(token: bytes, *, default: int, minimum: int) -> int:
    """The position a page token names; ``default`` for an empty token (the first page).

    Raises:
        InvalidArgument: the token is not one this server issued (not an integer, or below ``minimum``).
    """
    if not token:
        return default
    try:
        position = int(token.decode())
    except ValueError as e:
        raise InvalidArgument("next_page_token: malformed page token") from e
    if position < minimum:
        raise InvalidArgument("next_page_token: malformed page token")
    return position


__all__ = ["token_position"]
