"""Who is calling: a principal (an API key or a client certificate), its grants, and the call's principal.

The gRPC servicer (``spindle.controlplane._grpc_service``) resolves the caller to a
``Principal`` before anything else and makes it the *current* principal of the call
(a context variable), so code below it that must filter what it returns (namespace
listings, API-key listings) can ask :func:`current_principal`. The in-process stub
(``spindle.controlplane.embedded``) sets none: it is the user's own process, and
``current_principal()`` is then ``None``, meaning "unrestricted".
"""

from __future__ import annotations

import contextvars

from collections.abc import Mapping
from dataclasses import dataclass, field

from ._roles import Permission, Role


@dataclass(frozen=True)
class Principal:
    """An authenticated caller.

    Attributes:
        id: stable and unique: ``key:<key id>``, ``cert:<subject>``, or ``anonymous``
            (a server running with ``auth: {mode: none}``).
        name: for people (the key's name, the certificate's subject).
        grants: role per namespace name.
        system_admin: may do anything, on every namespace, and create namespaces.
        task_queues: namespace -> the task queues the worker grant there is confined to
            (``_task_queues``); a namespace missing here: every task queue.
    """

    id: str
    name: str
    grants: Mapping[str, Role] = field(default_factory=dict)
    system_admin: bool = False
    task_queues: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def role_in(self, namespace: str) -> Role | None:
        """The role this principal holds on ``namespace`` (None: no grant)."""
        return self.grants.get(namespace)

    def allows(self, permission: Permission, namespace: str) -> bool:
        """Whether this principal may do what ``permission`` stands for on ``namespace``."""
        if self.system_admin:
            return True
        role = self.grants.get(namespace)
        return role is not None and permission in role.permissions

    def administers(self, namespace: str) -> bool:
        """``admin`` on ``namespace`` (or ``system_admin``)."""
        return self.allows(Permission.ADMIN, namespace)

    def sees_namespace(self, namespace: str) -> bool:
        """Whether listings show ``namespace`` to this principal (any grant on it, or ``system_admin``)."""
        return self.system_admin or namespace in self.grants

    def __str__(self) -> str:
        return self.id if self.name in ("", self.id) else f"{self.id} ({self.name})"


#: The principal of every call when authentication is off (``auth: {mode: none}``, ``start-dev``).
ANONYMOUS = Principal("anonymous", "anonymous (authentication is off)", {}, system_admin=True)

_CURRENT: contextvars.ContextVar[Principal | None] = contextvars.ContextVar("spindle_principal", default=None)


def current_principal() -> Principal | None:
    """The principal of the call being served; None in-process (embedded), where nothing is restricted."""
    return _CURRENT.get()


def set_current_principal(principal: Principal | None) -> contextvars.Token[Principal | None]:
    """Make ``principal`` the current one for this task (the servicer does it once per call)."""
    return _CURRENT.set(principal)


def reset_current_principal(token: contextvars.Token[Principal | None]) -> None:
    """Undo :func:`set_current_principal`."""
    _CURRENT.reset(token)


__all__ = ["ANONYMOUS", "Principal", "current_principal", "reset_current_principal", "set_current_principal"]
