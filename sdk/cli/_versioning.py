"""Worker build versioning in ``spindle workflow``: the versioning of a run in ``describe``, and ``update-options``.

``spindle workflow update-options --workflow-id X (--pinned-version DEPLOYMENT.BUILD |
--auto-upgrade | --unset-override)`` sets or removes a run's versioning override (the RPC
``UpdateWorkflowExecutionOptions`` with ``update_mask.paths = ["versioning_override"]``); with
``--query`` it does so for every execution the query matches, as the other batch commands
(:mod:`spindle.cli._batch`: count, confirmation, progress, summary).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import click

from spindle.cli._output import OK, fail, out

if TYPE_CHECKING:
    from spindle.api import messages_pb2 as pb
    from spindle.api import service_pb2 as svc
    from spindle.client import Client, WorkflowExecutionDescription

__all__ = ["override_batch_call", "override_options", "override_single", "override_text", "parse_version",
           "versioning_dict"]

_BEHAVIOR_PREFIX = "VERSIONING_BEHAVIOR_"


def parse_version(text: str) -> tuple[str, str]:
    """``"orders.1.0"`` -> ``("orders", "1.0")``: the deployment name ends at the first dot.

    Raises:
        ValueError: no dot, or an empty deployment name or build id.
    """
    name, dot, build = text.partition(".")
    if not dot or not name.strip() or not build.strip():
        raise ValueError(f"expected DEPLOYMENT.BUILD, e.g. orders.1.0 (the deployment name, a dot, the build id), "
                         f"got {text!r}")
    return name, build


class _Version(click.ParamType):
    name = "DEPLOYMENT.BUILD"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            parse_version(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)
        return str(value)


def override_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--pinned-version``, ``--auto-upgrade``, ``--unset-override``."""
    for option in reversed([
        click.option("--pinned-version", type=_Version(), default=None, metavar="DEPLOYMENT.BUILD",
                     help="pin the run to this build: its workflow tasks go only to that build's workers, e.g. "
                          "orders.1.0"),
        click.option("--auto-upgrade", is_flag=True,
                     help="the run moves to the deployment's current version at its next workflow task"),
        click.option("--unset-override", is_flag=True,
                     help="remove the override: the run follows the behavior its workflow declared"),
    ]):
        f = option(f)
    return f


def override_text(params: dict[str, Any]) -> str | None:
    """What the flags ask for: ``"pinned:DEPLOYMENT.BUILD"``, ``"auto_upgrade"``, ``"unset"`` (None: no flag).

    Raises:
        CliError: more than one of the flags (exit status 2).
    """
    given = [text for text, on in ((f"pinned:{params['pinned_version']}", params["pinned_version"] is not None),
                                   ("auto_upgrade", params["auto_upgrade"]), ("unset", params["unset_override"]))
             if on]
    if len(given) > 1:
        fail("give only one of --pinned-version, --auto-upgrade and --unset-override")
    return given[0] if given else None


def _request(client: Client, override: str, workflow_id: str, run_id: str | None
             ) -> svc.UpdateWorkflowExecutionOptionsRequest:
    from spindle.api import messages_pb2 as pb
    from spindle.api import service_pb2 as svc

    req = svc.UpdateWorkflowExecutionOptionsRequest(
        namespace=client.namespace, workflow_execution=pb.WorkflowExecution(workflow_id=workflow_id,
                                                                            run_id=run_id or ""),
        identity=client.identity)
    req.update_mask.paths.append("versioning_override")
    o = req.workflow_execution_options.versioning_override
    if override.startswith("pinned:"):
        name, build = parse_version(override.removeprefix("pinned:"))
        o.pinned.behavior = pb.VersioningOverride.PINNED_OVERRIDE_BEHAVIOR_PINNED
        o.pinned.version.deployment_name, o.pinned.version.build_id = name, build
    elif override == "auto_upgrade":
        o.auto_upgrade = True
    else:  # "unset": the path without an override in the options removes it
        req.workflow_execution_options.ClearField("versioning_override")
    return req


def _said(override: str) -> str:
    if override.startswith("pinned:"):
        return f"pinned to {override.removeprefix('pinned:')}"
    return "auto-upgrade" if override == "auto_upgrade" else "removed"


async def override_single(params: dict[str, Any], client: Client) -> int:
    """``update-options --workflow-id X``: one run (``--run-id``, default the latest)."""
    override = override_text(params)
    assert override is not None  # the command checked
    await client.workflow_service.update_workflow_execution_options(
        _request(client, override, params["workflow_id"], params["run_id"]))
    out(f"versioning override of {params['workflow_id']}: {_said(override)}")
    return OK


def override_batch_call(params: dict[str, Any], client: Client
                        ) -> tuple[Callable[[Any, str], Awaitable[None]], list[Any]]:
    """``update-options --query ...``: the call for each matching execution, and what its batch id derives from."""
    override = override_text(params)
    assert override is not None

    async def act(target: Any, request_id: str) -> None:
        await client.workflow_service.update_workflow_execution_options(
            _request(client, override, target.workflow_id, target.run_id))

    return act, [override]


def _version(v: pb.WorkerDeploymentVersion) -> str | None:
    return f"{v.deployment_name}.{v.build_id}" if v.deployment_name else None


def versioning_dict(d: WorkflowExecutionDescription) -> dict[str, Any]:
    """``{"versioning": {...}}`` for a run that ran on a versioned worker or has an override, else ``{}``.

    ``behavior`` (PINNED / AUTO_UPGRADE, what its last completed task declared; null: none),
    ``deployment_version`` (the build that completed its last task), ``override``
    (``{"pinned_version": ...}`` or ``{"auto_upgrade": true}``; null: none) and
    ``pinned_version`` (the build its next workflow task waits for; null: the deployment's
    routing decides).
    """
    from spindle.api import messages_pb2 as pb
    from spindle.api import service_pb2 as svc

    raw = d.raw
    if isinstance(raw, svc.DescribeWorkflowExecutionResponse):
        info = raw.workflow_execution_info
    elif isinstance(raw, svc.WorkflowExecutionInfo):
        info = raw
    else:
        return {}
    if not info.HasField("versioning_info"):
        return {}
    v = info.versioning_info
    behavior = pb.VersioningBehavior.Name(v.behavior).removeprefix(_BEHAVIOR_PREFIX)
    override: dict[str, Any] | None = None
    if v.HasField("versioning_override"):
        o = v.versioning_override
        override = ({"pinned_version": _version(o.pinned.version)} if o.HasField("pinned")
                    else {"auto_upgrade": True} if o.auto_upgrade else None)
    return {"versioning": {
        "behavior": None if behavior == "UNSPECIFIED" else behavior,
        "deployment_version": _version(v.deployment_version) if v.HasField("deployment_version") else None,
        "override": override,
        "pinned_version": _version(v.pinned_version) if v.HasField("pinned_version") else None,
    }}
