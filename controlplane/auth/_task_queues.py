"""Worker keys confined to task queues: the rule of a key's list, and the check of every worker call.

A key's ``worker`` grant on a namespace may name the task queues it is confined to
(``CreateApiKeyRequest.task_queues``, stored as JSON in ``ApiKeyRow.task_queues``). For
such a key, on that namespace (docs/SECURITY.md, "Worker keys confined to task queues"):

- ``PollWorkflowTaskQueue`` / ``PollActivityTaskQueue``: the polled queue is one of its
  queues. A sticky poll (``sticky``) is allowed on ``<queue>/sticky/<anything>`` for one of
  them: that is how workers name their sticky queue (``spindle.worker``).
- Answers by task token (``RespondWorkflowTaskCompleted/Failed``, ``RespondQueryTaskCompleted``,
  ``RespondActivityTask*``, ``RecordActivityTaskHeartbeat``): the task queue signed into
  the token when the task was handed out (the run's normal queue for workflow and query
  tasks, the activity's queue for activity tasks) is one of its queues. A token without a
  task queue (signed before tokens carried one) is refused.
- ``RespondWorkflowTaskCompleted``: the commands that put work on a task queue of the
  same namespace (schedule an activity, start a child, continue as new) name one of its
  queues or none (the workflow's own, which the token proved is one of them), and a sticky
  queue (``sticky_attributes``; an activity answer's ``sticky_task_queue``) is
  ``<queue>/sticky/...`` of one of them.

Everything else a workflow task's commands do (signal or cancel another run of the
namespace, start a child of any type on an allowed queue) acts with the authority of the
namespace's workflows, as in Temporal. A key with no list for a namespace is not confined
there; a ``system_admin`` key never is.
"""

from __future__ import annotations

import json

from collections.abc import Mapping, Sequence
from typing import Any

from spindle.controlplane import _field_rules
from spindle.controlplane.errors import PermissionDenied

from ._principal import Principal
from ._roles import Role

#: Most task queues one namespace's worker grant may name.
MAX_TASK_QUEUES = 100
#: A worker's sticky queue is ``<its task queue>/sticky/<worker id>`` (``spindle.worker``).
STICKY_INFIX = "/sticky/"


def parse_task_queues(raw: str) -> dict[str, frozenset[str]]:
    """The confinement stored as JSON ``{namespace: [queue, ...]}`` ('' = none)."""
    return {ns: frozenset(queues) for ns, queues in json.loads(raw or "{}").items()}


def encode_task_queues(queues: Mapping[str, Sequence[str]]) -> str:
    """What the store keeps: sorted JSON, or '' when nothing is confined."""
    return json.dumps({ns: sorted(set(q)) for ns, q in sorted(queues.items())}) if queues else ""


def check_task_queues(queues: Mapping[str, Sequence[str]], grants: Mapping[str, Role], system_admin: bool,
                      max_id_length: int) -> dict[str, list[str]]:
    """The confinement a new key asks for, checked; ValueError naming what is wrong.

    Each namespace must be one the key holds ``worker`` on (not ``system_admin``: it is
    never confined), with 1 to :data:`MAX_TASK_QUEUES` task queue names that follow the
    request-name rule (``_field_rules.NAME``).
    """
    out: dict[str, list[str]] = {}
    for ns, names in sorted(queues.items()):
        where = f"task_queues[{ns!r}]"
        if system_admin:
            raise ValueError(f"{where}: a system_admin key cannot be confined to task queues")
        if grants.get(ns) is not Role.WORKER:
            held = f"role {grants[ns].value!r}" if ns in grants else "no grant"
            raise ValueError(f"{where}: task queues confine a 'worker' grant; the key holds {held} on namespace {ns!r}")
        if not names:
            raise ValueError(f"{where}: name at least one task queue (leave the namespace out for every queue)")
        if len(names) > MAX_TASK_QUEUES:
            raise ValueError(f"{where}: at most {MAX_TASK_QUEUES} task queues, got {len(names)}")
        for i, name in enumerate(names):
            error = "required (got an empty value)" if not name else None
            error = f"{where}.names[{i}]: {error}" if error else _field_rules.NAME(name, f"{where}.names[{i}]",
                                                                                  max_id_length)
            if error:
                raise ValueError(error)
        out[ns] = sorted(set(names))
    return out


def _is_allowed(allowed: frozenset[str], queue: str, sticky: bool = False) -> bool:
    if not sticky:
        return queue in allowed
    normal, infix, worker = queue.partition(STICKY_INFIX)
    return bool(infix) and bool(worker) and normal in allowed


def _refuse(rpc: str, principal: Principal, namespace: str, allowed: frozenset[str], queue: str, what: str) -> None:
    raise PermissionDenied(f"{rpc}: {what} task queue {queue!r} of namespace {namespace!r}, but API key {principal} "
                           f"is confined to task queues {', '.join(sorted(allowed))} there")


def check_worker_call(rpc: str, principal: Principal, namespace: str, request: Any, token_queue: str | None) -> None:
    """Raise PermissionDenied unless a worker call stays on the task queues ``principal`` is confined to.

    ``token_queue`` is the task queue of the task token (answers; None for polls).
    """
    allowed = principal.task_queues.get(namespace)
    if allowed is None or principal.system_admin:
        return
    if rpc in ("PollWorkflowTaskQueue", "PollActivityTaskQueue", "PollNexusTaskQueue"):
        sticky = bool(getattr(request, "sticky", False))
        if not _is_allowed(allowed, request.task_queue, sticky):
            _refuse(rpc, principal, namespace, allowed, request.task_queue, "polls sticky" if sticky else "polls")
        return
    if token_queue is None:
        return
    if not token_queue:
        raise PermissionDenied(f"{rpc}: the task token names no task queue (issued before tokens carried one), and "
                               f"API key {principal} is confined to task queues {', '.join(sorted(allowed))} of "
                               f"namespace {namespace!r}")
    if token_queue not in allowed:
        _refuse(rpc, principal, namespace, allowed, token_queue, "answers a task of")
    if rpc == "RespondWorkflowTaskCompleted":
        _check_commands(rpc, principal, namespace, request, allowed)
    sticky_queue = str(getattr(request, "sticky_task_queue", ""))  # an activity answer may take the next workflow task
    if sticky_queue and not _is_allowed(allowed, sticky_queue, sticky=True):
        _refuse(rpc, principal, namespace, allowed, sticky_queue, "sticky_task_queue names as its sticky queue")


def _check_commands(rpc: str, principal: Principal, namespace: str, request: Any, allowed: frozenset[str]) -> None:
    for cmd in request.commands:
        which = cmd.WhichOneof("attributes")
        if which not in ("schedule_activity_task_command_attributes", "start_child_workflow_execution_command_attributes",
                         "continue_as_new_workflow_execution_command_attributes"):
            continue
        attrs = getattr(cmd, which)
        if getattr(attrs, "namespace", "") not in ("", namespace):
            continue  # another namespace: the key needs writer there (Rule.acts_on), where it is not confined
        if attrs.task_queue and attrs.task_queue not in allowed:
            _refuse(rpc, principal, namespace, allowed, attrs.task_queue,
                    f"a command ({which.removesuffix('_command_attributes')}) puts work on")
    if request.HasField("sticky_attributes") and request.sticky_attributes.worker_task_queue:
        queue = request.sticky_attributes.worker_task_queue
        if not _is_allowed(allowed, queue, sticky=True):
            _refuse(rpc, principal, namespace, allowed, queue, "sticky_attributes names as its sticky queue")


__all__ = ["MAX_TASK_QUEUES", "STICKY_INFIX", "check_task_queues", "check_worker_call", "encode_task_queues",
           "parse_task_queues"]
