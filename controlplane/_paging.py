"""Page tokens of the list and history APIs: an integer position (offset or first event id) as ASCII."""

from __future__ import annotations

from spindle.controlplane.errors import InvalidArgument

#: No position this server issues comes near it; larger ones do not fit a store's 64-bit integers.
MAX_POSITION = 2**62


def token_position(token: bytes, *, default: int, minimum: int) -> int:
    """The position a page token names; ``default`` for an empty token (the first page).

    Raises:
        InvalidArgument: the token is not one this server issued (not an integer, below ``minimum`` or
            above :data:`MAX_POSITION`).
    """
    if not token:
        return default
    if len(token) > 20:  # 2**62 has 19 digits; also spares int() a 5,000-digit string
        raise InvalidArgument("next_page_token: malformed page token (not one this server issued)")
    try:
        position = int(token.decode())
    except ValueError as e:
        raise InvalidArgument("next_page_token: malformed page token") from e
    if position < minimum or position > MAX_POSITION:
        raise InvalidArgument("next_page_token: malformed page token")
    return position


__all__ = ["token_position"]
