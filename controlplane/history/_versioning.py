"""Worker build versioning of one run: what its history says about builds, folded into its state.

A versioned worker completes each workflow task naming its build and the workflow's behavior
(WorkflowTaskCompleted's ``deployment_version`` and ``versioning_behavior``); an operator may
set a versioning override (WorkflowExecutionOptionsUpdated). From those the run's **pin**
follows: the override's version, else its last build when the behavior is PINNED, else none
(its tasks follow the deployment's routing: the current or ramping version). The pin travels
with each task the run dispatches (``TaskRef.pin``), so matching hands it only to that build.

The run's visibility row carries the same facts as Temporal's system search attributes
(``TemporalWorkerDeploymentVersion``, ``TemporalWorkerDeployment``,
``TemporalWorkflowVersioningBehavior``), so ``ExecutionStatus = 'Running' AND
TemporalWorkerDeploymentVersion = 'orders.1.0'`` finds what still runs on an old build.
"""

from __future__ import annotations

import json

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from spindle.api import messages_pb2 as pb
from spindle.controlplane.deployments import split_version_key, version_key
from spindle.controlplane.matching import KIND_WORKFLOW

if TYPE_CHECKING:
    from spindle.controlplane.matching import Matching


class RunState(Protocol):
    """What this module reads and writes of a run's state: ``_mutable_state.MutableState`` folds its events
    through here, so this module cannot import it."""

    namespace_id: str
    workflow_id: str
    deployment_version: str
    versioning_behavior: int
    versioning_override: pb.VersioningOverride | None
    sticky_version: str
    search_attributes: dict[str, pb.Payload]

    @property
    def task_queue(self) -> str: ...

SA_VERSION = "TemporalWorkerDeploymentVersion"
SA_DEPLOYMENT = "TemporalWorkerDeployment"
SA_BEHAVIOR = "TemporalWorkflowVersioningBehavior"
#: Search-attribute values of the behaviors (Temporal's).
BEHAVIOR_NAMES = {pb.VERSIONING_BEHAVIOR_PINNED: "Pinned", pb.VERSIONING_BEHAVIOR_AUTO_UPGRADE: "AutoUpgrade"}
_JSON = {"encoding": b"json/plain"}


def key_of(v: pb.WorkerDeploymentVersion) -> str:
    """A version message's key ("" when it names no deployment)."""
    return version_key(v.deployment_name, v.build_id) if v.deployment_name else ""


def version_message(key: str) -> pb.WorkerDeploymentVersion:
    """The wire message of a version key (``key_of``'s inverse)."""
    name, build = split_version_key(key)
    return pb.WorkerDeploymentVersion(deployment_name=name, build_id=build)


def worker_version(opts: pb.WorkerDeploymentOptions) -> str:
    """A worker's version key from its deployment options ("" = unversioned, or versioning not used)."""
    return key_of(opts.version) if opts.use_worker_versioning else ""


def pin_of(st: RunState) -> str:
    """The build the run's next tasks must go to ("" = the deployment's routing decides)."""
    o = st.versioning_override
    if o is not None:
        if o.HasField("pinned"):
            return key_of(o.pinned.version)
        return ""  # auto-upgrade override
    if st.versioning_behavior == pb.VERSIONING_BEHAVIOR_PINNED:
        return st.deployment_version
    return ""


def fold_task_completed(st: RunState, a: pb.WorkflowTaskCompletedEventAttributes) -> None:
    """A WorkflowTaskCompleted: the run's last build and behavior (unset by an unversioned worker)."""
    version = key_of(a.deployment_version) if a.HasField("deployment_version") else ""
    if not version and not st.deployment_version:
        return  # never versioned: nothing to change (the common case)
    st.deployment_version = version
    st.versioning_behavior = a.versioning_behavior if version else pb.VERSIONING_BEHAVIOR_UNSPECIFIED
    _search_attributes(st)


def fold_options_updated(st: RunState, a: pb.WorkflowExecutionOptionsUpdatedEventAttributes) -> None:
    if a.unset_versioning_override:
        st.versioning_override = None
    elif a.HasField("versioning_override"):
        st.versioning_override = pb.VersioningOverride()
        st.versioning_override.CopyFrom(a.versioning_override)
    _search_attributes(st)


def fold_reset(st: RunState) -> None:
    """A reset run starts over on the deployment's routing: the build its copied events name is the one being
    rolled back from (an override, an operator's decision, stays)."""
    if st.deployment_version:
        st.deployment_version = ""
        st.versioning_behavior = pb.VERSIONING_BEHAVIOR_UNSPECIFIED
        _search_attributes(st)


def effective_behavior(st: RunState) -> int:
    o = st.versioning_override
    if o is not None:
        return pb.VERSIONING_BEHAVIOR_PINNED if o.HasField("pinned") else pb.VERSIONING_BEHAVIOR_AUTO_UPGRADE
    return st.versioning_behavior


def _search_attributes(st: RunState) -> None:
    sa = st.search_attributes
    pin = pin_of(st)
    version = pin or st.deployment_version
    behavior = BEHAVIOR_NAMES.get(effective_behavior(st), "")  # type: ignore[call-overload]
    for name, value in ((SA_VERSION, version), (SA_DEPLOYMENT, split_version_key(version)[0]), (SA_BEHAVIOR, behavior)):
        if value:
            sa[name] = pb.Payload(metadata=_JSON, data=json.dumps(value).encode())
        else:
            sa.pop(name, None)


def versioning_info(st: RunState) -> pb.WorkflowExecutionVersioningInfo | None:
    """What DescribeWorkflowExecution shows (None: the run never ran on a versioned worker and has no override)."""
    if not st.deployment_version and st.versioning_override is None:
        return None
    info = pb.WorkflowExecutionVersioningInfo(behavior=st.versioning_behavior)  # type: ignore[arg-type]
    if st.deployment_version:
        info.deployment_version.CopyFrom(version_message(st.deployment_version))
    if st.versioning_override is not None:
        info.versioning_override.CopyFrom(st.versioning_override)
    pin = pin_of(st)
    if pin:
        info.pinned_version.CopyFrom(version_message(pin))
    return info


def task_extra(st: RunState, queue: str) -> dict[str, str]:
    """A workflow or activity transfer task's extra: its queue, and the run's pin when it has one."""
    pin = pin_of(st)
    return {"q": queue, "p": pin} if pin else {"q": queue}


def sticky_fits(matching: "Matching", st: RunState, pin: str) -> bool:
    """Whether the worker holding ``st`` in its cache is the build the run's next task goes to."""
    if not st.sticky_version and not pin and st.namespace_id not in matching.versioned_namespaces:
        return True  # nothing versioned here (the common case)
    router = matching.router
    target = router.target(st.namespace_id, st.task_queue, KIND_WORKFLOW, st.workflow_id, pin) if router else None
    return (target or "") == st.sticky_version


def versioned_backlogs(matching: "Matching", namespaces: Any) -> Iterator[tuple[str, str, int, str, int]]:
    """``(namespace, task queue, kind, version, tasks)`` of the versioned queues (read at scrape time)."""
    for q in matching.queues():
        route = q.route
        if route is None:
            continue
        counts: dict[str, int] = {}
        for t in list(q.tasks):
            v = route(t) or ""
            counts[v] = counts.get(v, 0) + 1
        ns = namespaces.by_id(q.namespace_id)
        for v, n in counts.items():
            yield (ns.name if ns is not None else q.namespace_id, q.name, q.kind, v, n)


__all__ = ["BEHAVIOR_NAMES", "SA_BEHAVIOR", "SA_DEPLOYMENT", "SA_VERSION", "effective_behavior", "fold_options_updated",
           "fold_reset", "fold_task_completed", "key_of", "pin_of", "sticky_fits", "task_extra", "version_message",
           "versioned_backlogs", "versioning_info", "worker_version"]
