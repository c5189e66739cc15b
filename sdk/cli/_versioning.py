"""Worker build versioning in ``spindle workflow``: the versioning of a run in ``describe``, and ``update-options``.

``spindle workflow update-options --workflow-id X (--pinned-version DEPLOYMENT.BUILD |
--auto-upgrade | --unset-override)`` sets or removes a run's versioning override (the RPC
``UpdateWorkflowExecutionOptions`` with ``update_mask.paths = ["versioning_override"]``); with
``--query`` it does so for every execution the query matches, as the other batch commands
(:mod:`spindle.cli._batch`: count, confirmation, progress, summary; the batch engine's
``set_versioning_override`` operation); one run through ``WorkflowHandle.set_versioning_override``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from spindle.cli._output import OK, fail, out

if TYPE_CHECKING:
    from spindle.client import Client, WorkflowExecutionDescription
    from spindle.common import VersioningOverride, WorkerDeploymentVersion

__all__ = ["OVERRIDE_FLAGS", "override_options", "override_single", "parse_override", "versioning_dict"]

OVERRIDE_FLAGS = "--pinned-version DEPLOYMENT.BUILD, --auto-upgrade or --unset-override"


class _Version(click.ParamType):
    """``DEPLOYMENT.BUILD``: a worker deployment version (the deployment name ends at the first dot)."""

    name = "DEPLOYMENT.BUILD"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from spindle.common import WorkerDeploymentVersion

        if isinstance(value, WorkerDeploymentVersion):
            return value
        try:
            return WorkerDeploymentVersion.from_canonical_string(str(value))
        except ValueError:
            self.fail(f"expected DEPLOYMENT.BUILD, e.g. orders.1.0 (the deployment name, a dot, the build id), "
                      f"got {value!r}", param, ctx)


def override_options(f: Any) -> Any:
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


def parse_override(params: dict[str, Any]) -> VersioningOverride | None:
    """The override the flags ask for (None: ``--unset-override``), stored as ``params["override"]``.

    Raises:
        CliError: none of the three flags, or more than one (exit status 2).
    """
    from spindle.common import AutoUpgradeVersioningOverride, PinnedVersioningOverride

    pinned: WorkerDeploymentVersion | None = params["pinned_version"]
    given = (pinned is not None) + bool(params["auto_upgrade"]) + bool(params["unset_override"])
    if given != 1:
        fail(f"give one of {OVERRIDE_FLAGS}" if not given else
             "give only one of --pinned-version, --auto-upgrade and --unset-override")
    override = (PinnedVersioningOverride(pinned) if pinned is not None
                else AutoUpgradeVersioningOverride() if params["auto_upgrade"] else None)
    params["override"] = override
    return override


def _said(override: VersioningOverride | None) -> str:
    from spindle.common import PinnedVersioningOverride

    if isinstance(override, PinnedVersioningOverride):
        return f"pinned to {override.version.to_canonical_string()}"
    return "auto-upgrade" if override is not None else "removed"


async def override_single(params: dict[str, Any], client: Client) -> int:
    """``update-options --workflow-id X``: one run (``--run-id``, default the latest)."""
    override = params["override"]
    await client.get_workflow_handle(params["workflow_id"], run_id=params["run_id"]).set_versioning_override(override)
    out(f"versioning override of {params['workflow_id']}: {_said(override)}")
    return OK


def _version(v: WorkerDeploymentVersion | None) -> str | None:
    return v.to_canonical_string() if v is not None else None


def versioning_dict(d: WorkflowExecutionDescription) -> dict[str, Any]:
    """``{"versioning": {...}}`` for a run that ran on a versioned worker or has an override, else ``{}``.

    ``behavior`` (PINNED / AUTO_UPGRADE, what its last completed task declared; null: none),
    ``deployment_version`` (the build that completed its last task), ``override``
    (``{"pinned_version": ...}`` or ``{"auto_upgrade": true}``; null: none) and
    ``pinned_version`` (the build its next workflow task waits for; null: the deployment's
    routing decides).
    """
    from spindle.common import PinnedVersioningOverride, VersioningBehavior

    v = d.versioning_info
    if v is None:
        return {}
    o = v.versioning_override
    override = ({"pinned_version": o.version.to_canonical_string()} if isinstance(o, PinnedVersioningOverride)
                else {"auto_upgrade": True} if o is not None else None)
    return {"versioning": {
        "behavior": None if v.behavior == VersioningBehavior.UNSPECIFIED else v.behavior.name,
        "deployment_version": _version(v.deployment_version),
        "override": override,
        "pinned_version": _version(v.pinned_version),
    }}
