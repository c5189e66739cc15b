"""``DslWorkflow``: a loaded YAML workflow, usable wherever a workflow definition is."""

from __future__ import annotations

import functools

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import networkx as nx

from spindle.dsl._graph import build_graph, to_dot, to_svg, to_text
from spindle.dsl._model import InputSpec, ScheduleBlock, WorkflowDag, dag_to_json, definition_hash
from spindle.dsl._validate import check_inputs

if TYPE_CHECKING:
    from spindle._workflow.defn import WorkflowDefinition

__all__ = ["DslWorkflow"]


class DslWorkflow:
    """A validated YAML workflow.

    ``Worker(workflows=[wf])`` and ``client.start_workflow(wf, inputs, ...)`` accept
    it: it carries the ``@workflow.defn`` definition of a generic interpreter
    registered under the document's ``name`` (see ``definition``). Each start sends
    the compiled DAG with the inputs and the DAG's hash (the client calls
    :meth:`start_input` for you), so the execution keeps the DAG it started with
    when the file changes later. A worker runs a DAG sent in a start input only
    if it hashes to the definition the worker was given (README.md, "Which DAG
    a worker runs").
    """

    def __init__(self, dag: WorkflowDag) -> None:
        self.dag = dag

    @property
    def name(self) -> str:
        """The workflow type name (the document's ``name``)."""
        return self.dag.name

    @property
    def version(self) -> str | int | None:
        """The document's ``version``, if any."""
        return self.dag.version

    @property
    def description(self) -> str | None:
        """The document's ``description``, if any."""
        return self.dag.description

    @property
    def task_queue(self) -> str | None:
        """The default task queue of the document's steps, if any."""
        return self.dag.task_queue

    @property
    def inputs(self) -> tuple[InputSpec, ...]:
        """The declared inputs."""
        return self.dag.inputs

    @property
    def schedule(self) -> ScheduleBlock | None:
        """The document's ``schedule:`` block (what ``spindle dsl schedule`` uses where its flags are absent)."""
        return self.dag.schedule

    @property
    def file(self) -> str | None:
        """The path the document was loaded from (``<string>`` for text)."""
        return self.dag.file

    @functools.cached_property
    def dag_json(self) -> dict[str, Any]:
        """The compiled DAG as plain JSON (what an execution's input carries)."""
        return dag_to_json(self.dag)

    @functools.cached_property
    def definition_hash(self) -> str:
        """``sha256:<hex>`` of the compiled DAG's content (not of where the file is).

        Start inputs carry it as ``"definition"``; a worker given this workflow
        runs a start input's DAG only if it has this hash.
        """
        return definition_hash(self.dag_json)

    def check_inputs(self, inputs: Mapping[str, Any] | None) -> dict[str, Any]:
        """Check ``inputs`` against the declarations and apply defaults.

        Raises:
            DslError: an input is missing, unknown or of the wrong type.
        """
        return check_inputs(self.dag, inputs)

    def start_input(self, inputs: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The interpreter's single argument: ``{"dag": ..., "definition": ..., "inputs": ...}``.

        ``definition`` is :attr:`definition_hash`.

        Raises:
            DslError: the inputs do not match the declarations.
        """
        return {"dag": self.dag_json, "definition": self.definition_hash, "inputs": self.check_inputs(inputs)}

    def __spindle_start_args__(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """The start arguments the client sends for ``start_workflow(self, *args)``.

        ``Client.start_workflow`` calls this (it looks the name up, so the SDK does
        not import ``spindle.dsl``): the inputs mapping (or nothing) becomes
        ``(self.start_input(inputs),)``, which carries the DAG. Arguments that are
        already a start input are sent as they are.

        Raises:
            DslError: the inputs do not match the declarations.
            TypeError: more than one argument.
        """
        from spindle.dsl._runtime import is_start_input

        if len(args) > 1:
            raise TypeError(f"YAML workflow {self.name!r} takes one argument (the inputs mapping), got {len(args)}")
        if args and is_start_input(args[0]):
            return args
        return (self.start_input(args[0] if args else None),)

    @functools.cached_property
    def definition(self) -> Any:
        """The ``@workflow.defn(name=self.name)`` function that interprets this DAG."""
        from spindle.dsl._runtime import make_definition

        return make_definition(self.name, self.file, self.dag_json, self.definition_hash,
                               self.__spindle_start_args__)

    @property
    def __spindle_workflow_definition__(self) -> WorkflowDefinition:
        """What ``WorkflowDefinition.from_target`` looks up, so the SDK accepts ``self``."""
        from spindle._workflow.defn import WorkflowDefinition

        found = WorkflowDefinition.get(self.definition)
        assert found is not None
        return found

    def graph(self) -> nx.DiGraph:
        """The step graph (an edge from each dependency to its dependant)."""
        return build_graph(self.dag)

    def to_text(self) -> str:
        """A plain-text listing of the steps in topological order."""
        return to_text(self.dag)

    def to_dot(self) -> str:
        """Graphviz DOT source of the DAG."""
        return to_dot(self.dag)

    def to_svg(self) -> str:
        """A standalone SVG picture of the DAG."""
        return to_svg(self.dag)

    def __repr__(self) -> str:
        return f"DslWorkflow(name={self.name!r}, version={self.version!r}, steps={len(self.dag.steps)})"
