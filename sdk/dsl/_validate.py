"""Whole-document checks: step ids, dependencies, cycles, and what expressions read.

Also checks the inputs an execution is started with (``check_inputs``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import networkx as nx

from spindle.dsl._errors import STRING_SOURCE, DslError, Pos
from spindle.dsl._expressions import ENVIRONMENT, GLOBAL_NAMES, Reference
from spindle.dsl._graph import build_graph, find_cycles
from spindle.dsl._language import CHILD_RETRY_ERROR
from spindle.dsl._model import (
    ChildWorkflowCall,
    Compensation,
    ExprSite,
    Source,
    Step,
    WorkflowDag,
    json_type,
    value_matches,
)
from spindle.dsl._shapes import suggest as _suggest

__all__ = ["STEP_FIELDS", "WORKFLOW_FIELDS", "check_inputs", "validate_dag"]

#: What ``steps.<id>`` offers.
STEP_FIELDS = ("result", "status", "error")
#: What ``workflow`` offers.
WORKFLOW_FIELDS = ("id", "run_id", "type", "task_queue", "namespace", "attempt", "now")


class _Visible:
    """A set of step ids held as bits (see ``_Validator.upstream_walk``)."""

    __slots__ = ("bits", "index")

    def __init__(self, bits: int, index: Mapping[str, int]) -> None:
        self.bits = bits
        self.index = index

    def __contains__(self, step_id: object) -> bool:
        position = self.index.get(step_id) if isinstance(step_id, str) else None
        return position is not None and bool(self.bits >> position & 1)

    def plus(self, step_id: str) -> _Visible:
        """This set and ``step_id``."""
        return _Visible(self.bits | 1 << self.index[step_id], self.index)


class _Scope:
    """What the expressions of one place in the document may read."""

    def __init__(
        self,
        *,
        step: str | None,
        visible_steps: _Visible,
        loop: bool = False,
        error: bool = False,
        why_not_visible: str = "",
    ) -> None:
        self.step = step
        self.visible_steps = visible_steps
        self.loop = loop
        self.error = error
        self.why_not_visible = why_not_visible


class _Validator:
    def __init__(self, dag: WorkflowDag, file: str) -> None:
        self.dag = dag
        self.file = file
        self.errors: list[DslError] = []
        self.step_ids = [step.id for step in dag.steps]
        self.graph = build_graph(dag)
        #: step id -> its bit in upstream sets (document order of first definition).
        self.index: dict[str, int] = {node: position for position, node in enumerate(self.graph)}

    def error(self, reason: str, pos: Pos, step: str | None = None) -> None:
        self.errors.append(DslError(reason, file=self.file, pos=pos, step=step))

    def run(self) -> None:
        self.check_ids()
        self.check_dependencies()
        cyclic = self.check_cycles()
        steps_by_id: dict[str, list[Step]] = {}
        for step in self.dag.steps:
            steps_by_id.setdefault(step.id, []).append(step)
        compensations: dict[str, list[Compensation]] = {}
        for comp in self.dag.compensate:
            compensations.setdefault(comp.step, []).append(comp)
        self.check_compensation_targets()
        self.check_child_retry()
        for step_id, upstream in self.upstream_walk(cyclic):
            for step in steps_by_id[step_id]:
                self.check_step_expressions(step, upstream)
            for comp in compensations.get(step_id, ()):
                self.check_compensation_expressions(comp, upstream)
        self.check_outputs()

    def upstream_walk(self, cyclic: set[str]) -> Iterator[tuple[str, _Visible]]:
        """Each step id with the steps upstream of it, in topological order.

        Time and memory are linear in the number of steps and edges, times the
        number of steps / 64 for the bit sets (one machine word per 64 steps):
        a step's upstream set is the union of its dependencies' sets, as a Python
        int with bit ``i`` for the ``i``-th step, dropped once every dependant has
        used it. Steps on a cycle see no upstream steps (the cycle is reported).
        """
        graph = self.graph
        index = self.index
        if not cyclic:  # the usual case: every step is its own component
            components: nx.DiGraph = graph
            members: dict[Any, int] = {node: 1 << index[node] for node in graph}
            nodes_of: Callable[[Any], list[str]] = lambda component: [component]  # noqa: E731
        else:
            components = nx.condensation(graph)
            members = {}
            for component, data in components.nodes(data=True):
                bits = 0
                for node in data["members"]:
                    bits |= 1 << index[node]
                members[component] = bits
            nodes_of = lambda component: sorted(components.nodes[component]["members"], key=index.__getitem__)  # noqa: E731
        upstream: dict[Any, int] = {}
        waiting = dict(components.out_degree())
        for component in nx.topological_sort(components):
            bits = 0
            for parent in components.predecessors(component):
                bits |= upstream[parent] | members[parent]
                waiting[parent] -= 1
                if waiting[parent] == 0:
                    del upstream[parent]
            upstream[component] = bits
            for node in nodes_of(component):
                yield node, _Visible(0 if node in cyclic else bits, index)
            if waiting[component] == 0:
                del upstream[component]

    def check_ids(self) -> None:
        seen: dict[str, Step] = {}
        for step in self.dag.steps:
            if step.id in seen:
                first = _where(seen[step.id], "id")
                self.error(
                    f"duplicate step id (first defined at line {first.line})", _where(step, "id"), step.id
                )
            else:
                seen[step.id] = step

    def check_dependencies(self) -> None:
        for step in self.dag.steps:
            for index, dep in enumerate(step.depends_on):
                if dep not in self.graph:
                    self.error(
                        f"depends_on names unknown step {dep!r}{_suggest(dep, self.step_ids)}",
                        _where(step, f"depends_on[{index}]"),
                        step.id,
                    )

    def check_cycles(self) -> set[str]:
        cyclic: set[str] = set()
        by_id = {step.id: step for step in self.dag.steps}
        for cycle in find_cycles(self.graph):
            cyclic.update(cycle)
            first = by_id[cycle[0]]
            if len(cycle) == 1:
                reason = "depends on itself"
            else:
                chain = " -> ".join([*cycle, cycle[0]])
                reason = f"depends_on forms a cycle: {chain} (each step depends on the one before it)"
            self.error(reason, _where(first, "depends_on"), first.id)
        return cyclic

    def check_child_retry(self) -> None:
        """``retry`` on a ``workflow:`` step (possible in a DAG from JSON: ``load`` refuses it)."""
        bodies = [(step.id, step) for step in self.dag.steps]
        bodies += [(step.id, step.on_failure.handler) for step in self.dag.steps if step.on_failure.handler]
        bodies += [(comp.step, comp.body) for comp in self.dag.compensate]
        for step_id, body in bodies:
            if isinstance(body.kind, ChildWorkflowCall) and body.kind.retry is not None:
                self.error(CHILD_RETRY_ERROR, _where(body, "retry"), step_id)

    def check_step_expressions(self, step: Step, upstream: _Visible) -> None:
        scope = _Scope(
            step=step.id,
            visible_steps=upstream,
            loop=step.for_each is not None,
            why_not_visible="it is not upstream of this step: add it to depends_on (directly or "
            "through a step this one depends on)",
        )
        for site in _sites(step):
            self.check_site(site, scope, step.id, in_loop_header=site.key in ("for_each", "when"))
        handler = step.on_failure.handler
        if handler is not None:
            handler_scope = _Scope(
                step=step.id,
                visible_steps=upstream.plus(step.id),
                error=True,
                why_not_visible="it is not upstream of the failed step",
            )
            for site in _sites(handler):
                self.check_site(site, handler_scope, step.id, in_loop_header=False)

    def check_outputs(self) -> None:
        scope = _Scope(step=None, visible_steps=_Visible((1 << len(self.index)) - 1, self.index))
        for site in _sites(self.dag):
            self.check_site(site, scope, None, in_loop_header=False)

    def check_compensation_targets(self) -> None:
        seen: set[str] = set()
        for comp in self.dag.compensate:
            pos = _where(comp.body, "step")
            if comp.step not in self.graph:
                self.error(
                    f"'compensate' names unknown step {comp.step!r}{_suggest(comp.step, self.step_ids)}",
                    pos,
                    comp.step,
                )
                continue
            if comp.step in seen:
                self.error("has more than one 'compensate' entry", pos, comp.step)
            seen.add(comp.step)

    def check_compensation_expressions(self, comp: Compensation, upstream: _Visible) -> None:
        scope = _Scope(
            step=comp.step,
            visible_steps=upstream.plus(comp.step),
            why_not_visible="a compensation may read only the step it undoes and that step's "
            "upstream steps",
        )
        for site in _sites(comp.body):
            self.check_site(site, scope, comp.step, in_loop_header=False)

    def check_site(self, site: ExprSite, scope: _Scope, step: str | None, *, in_loop_header: bool) -> None:
        expression = site.expression
        for name in expression.filters:
            if name not in ENVIRONMENT.filters:
                self.error(f"unknown filter {name!r}{_suggest(name, ENVIRONMENT.filters)}", site.pos, step)
        for name in expression.tests:
            if name not in ENVIRONMENT.tests:
                self.error(f"unknown test {name!r}{_suggest(name, ENVIRONMENT.tests)}", site.pos, step)
        for ref in expression.references:
            problem = self.reference_problem(ref, scope, in_loop_header)
            if problem is not None:
                self.error(f"in {site.key!r}: {problem}", site.pos, step)

    def reference_problem(self, ref: Reference, scope: _Scope, in_loop_header: bool) -> str | None:
        root, path = ref.root, ref.path
        key = path[0] if path else None
        if root == "inputs":
            names = self.dag.input_names
            if key is not None and key not in names:
                known = ", ".join(names) if names else "none are declared"
                return f"unknown input {key!r}{_suggest(str(key), names)} (inputs: {known})"
            return None
        if root == "steps":
            if not isinstance(key, str):
                return "refer to a step as steps.<id>.result (or .status, .error)"
            if key not in self.graph:
                return f"unknown step {key!r}{_suggest(key, self.step_ids)}"
            if key == scope.step and key not in scope.visible_steps:
                return f"a step cannot read its own result (steps.{key})"
            if key not in scope.visible_steps:
                return f"steps.{key} cannot be used here: {scope.why_not_visible}"
            if len(path) > 1 and path[1] not in STEP_FIELDS:
                return (
                    f"steps.{key} has no {path[1]!r}{_suggest(str(path[1]), STEP_FIELDS)} "
                    f"(use {', '.join(STEP_FIELDS)})"
                )
            return None
        if root in ("item", "index"):
            if not scope.loop:
                return f"{root!r} is only available in a step with for_each"
            if in_loop_header:
                return f"{root!r} is not available in for_each or when (they are evaluated once per step)"
            return None
        if root == "workflow":
            if key is not None and key not in WORKFLOW_FIELDS:
                return f"workflow has no {key!r}{_suggest(str(key), WORKFLOW_FIELDS)} (use {', '.join(WORKFLOW_FIELDS)})"
            return None
        if root == "error":
            return None if scope.error else "'error' is only available in an on_failure handler"
        if root in GLOBAL_NAMES:
            return None
        usable = ["inputs", "steps", "workflow", *(["item", "index"] if scope.loop else [])]
        usable += ["error"] if scope.error else []
        return f"unknown name {root!r}{_suggest(root, usable)} (use {', '.join(usable)})"


def _where(node: Step | WorkflowDag, key: str) -> Pos:
    source: Source | None = node.source
    return source.where(key) if source is not None else Pos(1, 1)


def _sites(node: Step | WorkflowDag) -> tuple[ExprSite, ...]:
    return node.source.sites if node.source is not None else ()


def validate_dag(dag: WorkflowDag) -> None:
    """Check a freshly built DAG as a whole.

    Raises:
        DslError: the first problem by position (``.errors`` lists them all).
    """
    validator = _Validator(dag, dag.file or STRING_SOURCE)
    validator.run()
    if validator.errors:
        raise DslError.collect(validator.errors)
    assert nx.is_directed_acyclic_graph(validator.graph)


def check_inputs(dag: WorkflowDag, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The inputs of a new execution, with defaults applied.

    Raises:
        DslError: an input is missing, unknown or of the wrong type; the message
            names the input and points at its declaration.
    """
    file = dag.file or dag.name
    header = dag.source

    def fail(reason: str, name: str | None = None) -> DslError:
        key = f"inputs.{name}" if name is not None else "inputs"
        pos = header.where(key) if header is not None else Pos(1, 1)
        return DslError(reason, file=file, pos=pos)

    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise fail(f"the inputs must be a JSON object (mapping), got {json_type(given)}")
    declared = {spec.name: spec for spec in dag.inputs}
    for name in given:
        if name not in declared:
            raise fail(
                f"unknown input {name!r}{_suggest(str(name), declared)} "
                f"(declared: {', '.join(declared) or 'none'})"
            )
    values: dict[str, Any] = {}
    for name, spec in declared.items():
        if name in given:
            value = given[name]
            if not value_matches(value, spec.type):
                raise fail(
                    f"input {name!r} must be of type {spec.type}, got {json_type(value)} {value!r}", name
                )
            values[name] = value
        elif spec.has_default:
            values[name] = spec.default
        elif spec.required:
            raise fail(f"missing required input {name!r} ({spec.type})", name)
        else:
            values[name] = None
    return values
