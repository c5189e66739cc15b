"""How many connections a server process accepts, how long it keeps idle ones, and its file limit.

Every client connection costs the server one file descriptor. Without a cap, a process
with a small open-files limit (``ulimit -n 1024`` is a common default; 128 was seen) runs
out of descriptors: the listener can no longer accept, so every new client waits until its
deadline (gRPC logs "File descriptor limit reached. Retrying."), and the process cannot open
the files it needs for its own work either. Three measures, applied when a server starts
(:func:`server_options`, used by ``serve`` and by a cluster member's public listener):

- The soft ``RLIMIT_NOFILE`` is raised to the hard limit (:func:`raise_open_files_limit`),
  as servers commonly do; the effective limit is logged.
- Connections are capped (``grpc.max_allowed_incoming_connections``) at
  ``ServerConfig.max_connections``, lowered to what the file limit leaves after the
  descriptors already open and a reserve (``FD_RESERVE``) for the process's own files. A
  connection over the cap is closed by gRPC as soon as it is accepted: the client sees
  UNAVAILABLE at once (gRPC has no status to send before a connection is set up) and
  reconnects with its backoff; it never waits for a deadline.
- Connections without calls are closed after ``max_connection_idle`` (a GOAWAY: gRPC
  clients reconnect on their next call, unnoticed); a connection that never completes its
  handshake is closed after ``connection_handshake_timeout``; keepalive pings
  (``keepalive_time``/``keepalive_timeout``) find peers that vanished without closing their
  connection (their long polls are then cancelled and their unstarted tasks put back).

Per-client limits on concurrent long polls are :mod:`spindle.controlplane._long_polls`.
"""

from __future__ import annotations

import logging
import os
import resource

from typing import Any

from spindle.controlplane.config import ServerConfig

__all__ = ["FD_RESERVE", "OpenFiles", "connection_cap", "open_file_count", "raise_open_files_limit", "server_options"]

log = logging.getLogger("spindle.server")

#: File descriptors kept free for the process's own use (database, blob and archive files,
#: outgoing connections to peers and object stores), on top of those open when it starts.
FD_RESERVE = 64
#: Where the soft limit is raised to when the hard limit is "unlimited".
_UNLIMITED_TARGET = 1 << 20


class OpenFiles:
    """The open-files limit of this process after :func:`raise_open_files_limit`: soft (effective) and hard."""

    def __init__(self, soft: int, hard: int, raised_from: int | None) -> None:
        self.soft = soft
        self.hard = hard
        #: The soft limit before it was raised (None: it was already the hard limit, or could not be raised).
        self.raised_from = raised_from


def raise_open_files_limit() -> OpenFiles:
    """Raise this process's soft ``RLIMIT_NOFILE`` to its hard limit; the limits in force afterwards.

    Never fails: a platform or a sandbox that refuses the change leaves the soft limit as it was.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, _UNLIMITED_TARGET)
    if soft == resource.RLIM_INFINITY or (target != resource.RLIM_INFINITY and soft >= target):
        return OpenFiles(soft, hard, None)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as e:
        log.warning("cannot raise the open-files limit from %d to %d: %s", soft, target, e)
        return OpenFiles(soft, hard, None)
    return OpenFiles(target, hard, soft)


def open_file_count() -> int:
    """File descriptors this process has open now (0 where the platform does not tell)."""
    for d in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(d))
        except OSError:
            continue
    return 0


def connection_cap(config: ServerConfig, files: OpenFiles, in_use: int) -> int:
    """The most connections the server accepts: ``max_connections``, lowered to fit the file limit.

    At least 1, so that a misconfigured process still answers (and says why in its log).
    """
    cap = config.max_connections
    if files.soft != resource.RLIM_INFINITY:
        cap = min(cap, files.soft - in_use - FD_RESERVE)
    return max(1, cap)


def server_options(config: ServerConfig, base: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``base`` gRPC server options plus the connection limits of ``config``, for this process.

    Raises the process's open-files limit first and logs the limits in force.
    """
    files = raise_open_files_limit()
    in_use = open_file_count()
    cap = connection_cap(config, files, in_use)
    if files.raised_from is not None:
        log.info("open-files limit raised from %d to %d", files.raised_from, files.soft)
    log.info("open-files limit %s (%d in use); accepting at most %d connections (max_connections %d)",
             "unlimited" if files.soft == resource.RLIM_INFINITY else files.soft, in_use, cap, config.max_connections)
    if cap < config.max_connections and cap < 100:
        log.warning("the open-files limit (%s) leaves room for only %d client connections: raise it (ulimit -n) "
                    "for more clients", files.soft, cap)
    opts = [o for o in base if not o[0].startswith(_OURS)]
    opts += [
        ("grpc.max_allowed_incoming_connections", cap),
        ("grpc.server_handshake_timeout_ms", _ms(config.connection_handshake_timeout)),
        ("grpc.keepalive_time_ms", _ms(config.keepalive_time)),
        ("grpc.keepalive_timeout_ms", _ms(config.keepalive_timeout)),
        # clients may ping as often as every 10 s, also between calls (as Temporal's frontend allows)
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
    ]
    if config.max_connection_idle > 0:
        opts.append(("grpc.max_connection_idle_ms", _ms(config.max_connection_idle)))
    if config.max_connection_age > 0:
        opts.append(("grpc.max_connection_age_ms", _ms(config.max_connection_age)))
        # calls in flight when a connection reaches its age may finish, long polls included
        opts.append(("grpc.max_connection_age_grace_ms", _ms(config.long_poll_timeout + 10.0)))
    return opts


_OURS = ("grpc.max_allowed_incoming_connections", "grpc.server_handshake_timeout_ms", "grpc.keepalive_",
         "grpc.http2.min_ping_interval_without_data_ms", "grpc.max_connection_")


def _ms(seconds: float) -> int:
    return max(1, min(2**31 - 1, int(seconds * 1000)))
