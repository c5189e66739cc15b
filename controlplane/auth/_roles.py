"""The four per-namespace roles and what each allows (docs/SECURITY.md).

A role is a set of permissions, not a rung on a ladder: ``worker`` and ``writer`` both
include ``reader`` but neither includes the other (a worker's key cannot call the RPCs
that start, signal or terminate runs; a writer's key cannot poll tasks). ``admin`` holds
every permission. A worker's key does act through the workflow tasks it answers: their
commands act with the authority of the namespace's workflows, as in Temporal (start a
child, signal or cancel a run of the namespace); ``_task_queues`` confines a key's worker
grant to named task queues.

=========  ======================================================================
role       may
=========  ======================================================================
reader     describe the namespace; describe, list and count runs; read histories; query
worker     reader + poll workflow and activity tasks, respond to them, heartbeat
writer     reader + start, signal, signal-with-start, update, cancel, terminate, reset
admin      all of these + update and delete the namespace, its search attributes and
           archival, and manage the API keys whose grants are on it
=========  ======================================================================

``system_admin`` (a flag of the principal, not a namespace role) may do everything,
including creating namespaces and listing all of them.
"""

from __future__ import annotations

import enum


class Permission(enum.Enum):
    """What one RPC needs on its namespace."""

    READ = "read"
    WORK = "work"
    WRITE = "write"
    ADMIN = "admin"


class Role(enum.Enum):
    """A principal's role on one namespace."""

    READER = "reader"
    WORKER = "worker"
    WRITER = "writer"
    ADMIN = "admin"

    @property
    def permissions(self) -> frozenset[Permission]:
        """What this role allows."""
        return ALLOWS[self]


ALLOWS: dict[Role, frozenset[Permission]] = {
    Role.READER: frozenset({Permission.READ}),
    Role.WORKER: frozenset({Permission.READ, Permission.WORK}),
    Role.WRITER: frozenset({Permission.READ, Permission.WRITE}),
    Role.ADMIN: frozenset(Permission),
}

#: The role an error names when a permission is missing: the smallest role that has it.
ROLE_FOR: dict[Permission, Role] = {
    Permission.READ: Role.READER,
    Permission.WORK: Role.WORKER,
    Permission.WRITE: Role.WRITER,
    Permission.ADMIN: Role.ADMIN,
}

ROLE_NAMES = tuple(r.value for r in Role)


def parse_role(value: object, where: str) -> Role:
    """The role named ``value``; ValueError naming ``where`` and the four roles otherwise."""
    try:
        return Role(value)
    except ValueError:
        raise ValueError(f"{where}: unknown role {value!r} (one of {', '.join(ROLE_NAMES)})") from None


__all__ = ["ALLOWS", "Permission", "ROLE_FOR", "ROLE_NAMES", "Role", "parse_role"]
