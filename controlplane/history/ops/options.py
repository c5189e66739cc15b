"""UpdateWorkflowExecutionOptions: set or remove a run's versioning override (worker build versioning).

An override moves one run off its deployment's routing: pinned to a version (every later task
goes to that build's pollers; its workflow task already waiting in a queue moves there at once),
or auto-upgrade (its tasks follow the current version). It is an event in the history
(WorkflowExecutionOptionsUpdated; buffered while a workflow task runs, like a signal), so it
survives restarts and shard moves and replays as nothing (no command).
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import FailedPrecondition, InvalidArgument
from spindle.controlplane.namespaces import Namespace

from .._context import HistoryContext
from .._txn import Txn
from .._versioning import pin_of
from ._run import visibility_task

OVERRIDE_PATH = "versioning_override"


def check_request(req: svc.UpdateWorkflowExecutionOptionsRequest) -> bool:
    """The request's rules (InvalidArgument naming the field); whether it removes the override."""
    if not req.workflow_execution.workflow_id:
        raise InvalidArgument("workflow_execution.workflow_id: required")
    paths = list(req.update_mask.paths)
    if paths != [OVERRIDE_PATH]:
        raise InvalidArgument(f"update_mask.paths: must be [{OVERRIDE_PATH!r}] (the only option that can be "
                              f"changed), got {paths}")
    opts = req.workflow_execution_options
    if not opts.HasField("versioning_override"):
        return True
    o = opts.versioning_override
    if o.HasField("pinned"):
        v = o.pinned.version
        if not v.deployment_name or not v.build_id:
            raise InvalidArgument("workflow_execution_options.versioning_override.pinned.version: needs a "
                                  "deployment_name and a build_id")
        if "." in v.deployment_name:
            raise InvalidArgument("workflow_execution_options.versioning_override.pinned.version.deployment_name: "
                                  f"must not contain '.', got {v.deployment_name!r}")
    elif not o.auto_upgrade:
        raise InvalidArgument("workflow_execution_options.versioning_override: set pinned or auto_upgrade "
                              "(or leave the override out to remove it)")
    return False


async def update_options(ctx: HistoryContext, ns: Namespace, req: svc.UpdateWorkflowExecutionOptionsRequest
                         ) -> svc.UpdateWorkflowExecutionOptionsResponse:
    """Set or remove the run's override; the options in force after the change."""
    unset = check_request(req)
    ex = req.workflow_execution
    async with ctx.cache.locked(ns.id, ex.workflow_id):
        st = await ctx.cache.resolve(ns.id, ex.workflow_id, ex.run_id)
        if not st.running:
            raise FailedPrecondition(f"workflow_execution: workflow {st.workflow_id!r} run {st.run_id} is already "
                                     "closed; options change only for running executions")
        attrs = pb.WorkflowExecutionOptionsUpdatedEventAttributes(identity=req.identity,
                                                                  unset_versioning_override=unset)
        if not unset:
            attrs.versioning_override.CopyFrom(req.workflow_execution_options.versioning_override)
        txn = Txn(st, ctx.clock.now_ms())
        appended = txn.external(pb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED,
                                "workflow_execution_options_updated_event_attributes", attrs)
        if appended is not None:
            visibility_task(ctx, txn)
        await ctx.commit(txn)
        if appended is not None:
            wt = st.workflow_task
            if wt is not None and not wt.started:  # a task waiting in a queue (maybe for a build with no poller)
                ctx.matching.repin(ns.id, st.task_queue, st.workflow_id, st.run_id, pin_of(st))
            st.sticky_queue = ""  # the worker holding it in cache may be another build
        resp = svc.UpdateWorkflowExecutionOptionsResponse()
        if not unset:
            resp.workflow_execution_options.versioning_override.CopyFrom(attrs.versioning_override)
        return resp


__all__ = ["OVERRIDE_PATH", "check_request", "update_options"]
