"""Whether a listen or dial address stays on this machine: one rule for the server and the SDK.

The control plane warns or refuses when a listener without protection is reachable from other
machines (an open dev server, the metrics port, a cluster's internal listener), and the SDK
refuses plain HTTP to a codec server on another machine. Both ask this module, so that the
same spelling is judged the same everywhere (the SDK never imports the control plane, and the
control plane imports only ``spindle.api`` of the SDK).
"""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback_host"]


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (the host part of ``HOST:PORT`` or of a URL) names this machine only.

    True for ``localhost``, any address in 127.0.0.0/8 and ``::1`` (with or without brackets);
    False for every other name (a name such as ``127.example.com`` is not an address) and for
    the wildcard addresses ``0.0.0.0`` and ``::``, which listen on every interface.
    """
    host = host.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
