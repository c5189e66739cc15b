"""``temporalio.worker.workflow_sandbox``'s names, as Spindle means them.

Spindle has no import sandbox, by design: workflow modules are imported once, like any Python
module, and determinism is kept by the workflow event loop, the runtime guards on the clock and
randomness, and the static check the :class:`~spindle.worker.Worker` runs on each workflow when it
is created (``WorkflowDeterminismCheckError``). So:

- :class:`SandboxedWorkflowRunner` and :class:`UnsandboxedWorkflowRunner` are both Spindle's one
  workflow runner; ``Worker(workflow_runner=...)`` takes either.
- :class:`SandboxRestrictions` is read by the static check where it means something there:
  a module made unrestricted in ``invalid_module_members`` (``with_child_unrestricted("os")``, or
  its child deleted from ``children``) is no longer reported by the check (e.g. ``os.getpid()``
  in workflow code). ``passthrough_modules`` / ``with_passthrough_modules`` /
  ``with_passthrough_all_modules`` are kept and change nothing (every import is already a normal
  import, as ``workflow.unsafe.imports_passed_through()`` is).
- ``UnsandboxedWorkflowRunner`` lifts nothing: the static check still runs (opt a workflow out
  with ``@workflow.defn(check_determinism=False)``).
"""

from __future__ import annotations

import dataclasses

from collections.abc import Mapping
from typing import ClassVar

__all__ = ["RestrictionContext", "SandboxMatcher", "SandboxRestrictions", "SandboxedWorkflowRunner",
           "UnsandboxedWorkflowRunner", "WorkflowRunner"]

#: The modules whose members the static determinism check reports (the top-level names of its rules).
_CHECKED_MODULES = ("datetime", "time", "random", "secrets", "uuid", "os", "sys", "platform", "getpass", "locale",
                    "socket", "urllib", "http", "requests", "subprocess", "threading")


class RestrictionContext:
    """Accepted for Temporal compatibility; Spindle's restrictions have no runtime context."""


@dataclasses.dataclass(frozen=True)
class SandboxMatcher:
    """A tree of restricted names, as Temporal's. Only the top level of ``children`` is read (by the static check)."""

    access: frozenset[str] = frozenset()
    use: frozenset[str] = frozenset()
    children: Mapping[str, SandboxMatcher] = dataclasses.field(default_factory=dict)
    match_self: bool = False
    only_runtime: bool = False

    #: A matcher that restricts nothing.
    none: ClassVar[SandboxMatcher]
    #: A matcher that restricts everything below it.
    all: ClassVar[SandboxMatcher]

    def with_child_unrestricted(self, *child_path: str) -> SandboxMatcher:
        """A copy with the child at ``child_path`` restricting nothing (``"os"``, or ``"datetime", "date"``).

        Raises:
            ValueError: no path was given.
        """
        if not child_path:
            raise ValueError("with_child_unrestricted needs a child name, e.g. 'os'")
        head, *rest = child_path
        child = self.children.get(head, SandboxMatcher.none)
        new = child.with_child_unrestricted(*rest) if rest else SandboxMatcher.none
        return dataclasses.replace(self, children={**self.children, head: new})

    def restricts(self, name: str) -> bool:
        """Whether the top-level child ``name`` restricts anything."""
        child = self.children.get(name)
        return child is not None and child != SandboxMatcher.none


SandboxMatcher.none = SandboxMatcher()
SandboxMatcher.all = SandboxMatcher(match_self=True)


@dataclasses.dataclass(frozen=True)
class SandboxRestrictions:
    """What the (absent) sandbox would restrict: see the module docstring for what Spindle reads."""

    passthrough_modules: frozenset[str] = frozenset()
    invalid_modules: SandboxMatcher = SandboxMatcher.none
    invalid_module_members: SandboxMatcher = dataclasses.field(default_factory=lambda: SandboxRestrictions.invalid_module_members_default)
    passthrough_all_modules: bool = False
    disable_lazy_sys_module_passthrough: bool = False

    passthrough_modules_minimum: ClassVar[frozenset[str]] = frozenset()
    passthrough_modules_with_temporal: ClassVar[frozenset[str]] = frozenset()
    passthrough_modules_maximum: ClassVar[frozenset[str]] = frozenset()
    passthrough_modules_default: ClassVar[frozenset[str]] = frozenset()
    invalid_module_members_default: ClassVar[SandboxMatcher]
    invalid_modules_default: ClassVar[SandboxMatcher] = SandboxMatcher.none
    #: The restrictions the static check applies by default (every module it knows).
    default: ClassVar[SandboxRestrictions]

    def with_passthrough_modules(self, *modules: str) -> SandboxRestrictions:
        """A copy with ``modules`` added to ``passthrough_modules`` (which changes nothing in Spindle)."""
        return dataclasses.replace(self, passthrough_modules=self.passthrough_modules | frozenset(modules))

    def with_passthrough_all_modules(self) -> SandboxRestrictions:
        """A copy with ``passthrough_all_modules=True`` (which changes nothing in Spindle)."""
        return dataclasses.replace(self, passthrough_all_modules=True)

    def unrestricted_modules(self) -> frozenset[str]:
        """The modules the static check does not report under these restrictions."""
        return frozenset(m for m in _CHECKED_MODULES if not self.invalid_module_members.restricts(m))


SandboxRestrictions.invalid_module_members_default = SandboxMatcher(
    children={m: SandboxMatcher.all for m in _CHECKED_MODULES})
SandboxRestrictions.default = SandboxRestrictions()


class WorkflowRunner:
    """What ``Worker(workflow_runner=...)`` takes. Spindle has one runner; this says which check it applies."""

    def unrestricted_modules(self) -> frozenset[str]:
        """Modules the worker's static determinism check does not report."""
        return frozenset()


class UnsandboxedWorkflowRunner(WorkflowRunner):
    """Spindle's normal runner (there is no sandbox to leave); the static check still runs."""


@dataclasses.dataclass(frozen=True)
class SandboxedWorkflowRunner(WorkflowRunner):
    """Spindle's normal runner, with :class:`SandboxRestrictions` read by the static check (module docstring)."""

    restrictions: SandboxRestrictions = SandboxRestrictions.default
    runner_class: type[WorkflowRunner] = UnsandboxedWorkflowRunner

    def unrestricted_modules(self) -> frozenset[str]:
        """The modules ``restrictions`` makes unrestricted."""
        return self.restrictions.unrestricted_modules()
