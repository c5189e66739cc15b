"""Apply the codec chain to every ``Payload`` inside a protobuf message, in place.

The client encodes requests and decodes responses with it; the worker does the
same for tasks and completions, so the server stores only encoded bytes. All the
payloads of one message are collected first and given to each codec in one batch
(one ``encode``/``decode`` call per codec per message), except that a codec that
takes a serialization context (:class:`~spindle.converter.WithSerializationContext`)
is called once per distinct context.

Context. Each payload's :class:`~spindle.converter.WorkflowSerializationContext`
says which namespace and workflow it belongs to and its role (``field``). The
workflow is found in the message itself (a request's ``workflow_id`` /
``workflow_execution`` / ``execution``, a child workflow's or signalled workflow's
id inside commands and events, each execution of a list) or, for messages that do
not carry it (history pages, task completions), in the ``context`` the caller
passes. The role names what the payload *is*, the same at every hop it travels
(a workflow's input in the start request, in ``WorkflowExecutionStarted``, in a
child's initiated event and in a continue-as-new command is ``workflow.input``;
an activity result is ``activity.result`` in the completion request and in
``ActivityTaskCompleted``; a schedule action's input is ``workflow.input`` too, with the
action's id prefix as its workflow), so a codec that binds ciphertext to its context decodes
on one side what it encoded on the other. Roles: ``workflow.input``,
``workflow.result``, ``workflow.cancel_details``, ``workflow.terminate_details``,
``signal.input``, ``query.args``, ``query.result``, ``update.input``,
``update.result``, ``activity.input``, ``activity.result``, ``activity.heartbeat``,
``activity.cancel_details``, ``failure``, ``marker.<name>``, ``memo.<key>``,
``header.<key>``; a payload field not listed is named after its proto field.

Failures. When a codec of the chain has ``encode_common_attributes`` set (the
:class:`~spindle.converter.EncryptionCodec` does), each ``Failure``'s message and
stack trace move into its ``encoded_attributes`` payload before encoding, and its
message reads ``"Encoded failure"`` (Temporal's ``encode_common_attributes``), so
the server never stores them in plaintext. Decoding puts them back.

``SearchAttributes`` are skipped: the server indexes their JSON values, so they
must stay readable.
"""

from __future__ import annotations

import json

from collections.abc import Sequence
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from spindle.api import messages_pb2 as pb
from spindle.converter._encodings import ENCODING_JSON
from spindle.converter._payload_codec import PayloadCodec, decode_payloads, encode_payloads
from spindle.converter._serialization_context import WithSerializationContext, WorkflowSerializationContext

__all__ = ["ENCODED_FAILURE_MESSAGE", "collect_payloads", "collect_with_contexts", "encode_message",
           "decode_message", "payload_role"]

#: The message of a failure whose message and stack trace travel in ``encoded_attributes`` (Temporal's text).
ENCODED_FAILURE_MESSAGE = "Encoded failure"

_PAYLOAD = pb.Payload.DESCRIPTOR.full_name
_PAYLOADS = pb.Payloads.DESCRIPTOR.full_name
_FAILURE = pb.Failure.DESCRIPTOR.full_name
_EXECUTION = pb.WorkflowExecution.DESCRIPTOR.full_name
_SKIP = frozenset({pb.SearchAttributes.DESCRIPTOR.full_name})

# What each payload-holding field carries, by (message name, field name). The same value
# keeps its role at every hop (see the module docstring); maps append ".<key>".
_ROLES: dict[tuple[str, str], str] = {}


def _roles(role: str, *locations: str) -> None:
    for loc in locations:
        msg, field = loc.split(".")
        _ROLES[(msg, field)] = role


_roles("workflow.input", "StartWorkflowExecutionRequest.input", "WorkflowExecutionStartedEventAttributes.input",
       "ContinueAsNewWorkflowExecutionCommandAttributes.input", "WorkflowExecutionContinuedAsNewEventAttributes.input",
       "StartChildWorkflowExecutionCommandAttributes.input",
       "StartChildWorkflowExecutionInitiatedEventAttributes.input", "ScheduleActionStartWorkflow.input")
_roles("workflow.result", "CompleteWorkflowExecutionCommandAttributes.result",
       "WorkflowExecutionCompletedEventAttributes.result", "ChildWorkflowExecutionCompletedEventAttributes.result",
       "WorkflowExecutionStartedEventAttributes.last_completion_result")
_roles("workflow.cancel_details", "CancelWorkflowExecutionCommandAttributes.details",
       "WorkflowExecutionCanceledEventAttributes.details", "ChildWorkflowExecutionCanceledEventAttributes.details")
_roles("workflow.terminate_details", "TerminateWorkflowExecutionRequest.details",
       "WorkflowExecutionTerminatedEventAttributes.details")
_roles("signal.input", "SignalWorkflowExecutionRequest.input", "SignalWithStartWorkflowExecutionRequest.signal_input",
       "WorkflowExecutionSignaledEventAttributes.input", "SignalExternalWorkflowExecutionCommandAttributes.input",
       "SignalExternalWorkflowExecutionInitiatedEventAttributes.input")
_roles("query.args", "WorkflowQuery.query_args")
_roles("query.result", "QueryWorkflowResponse.query_result", "RespondQueryTaskCompletedRequest.query_result")
_roles("update.input", "UpdateRequest.input", "WorkflowExecutionUpdateAcceptedEventAttributes.input")
_roles("update.result", "UpdateWorkflowExecutionResponse.success", "CompleteUpdateCommandAttributes.success",
       "WorkflowExecutionUpdateCompletedEventAttributes.success")
_roles("activity.input", "ScheduleActivityTaskCommandAttributes.input", "ActivityTaskScheduledEventAttributes.input",
       "PollActivityTaskQueueResponse.input")
_roles("activity.result", "RespondActivityTaskCompletedRequest.result", "ActivityTaskCompletedEventAttributes.result")
_roles("activity.heartbeat", "RecordActivityTaskHeartbeatRequest.details",
       "RespondActivityTaskFailedRequest.last_heartbeat_details", "PollActivityTaskQueueResponse.heartbeat_details",
       "PendingActivityInfo.heartbeat_details", "TimeoutFailureInfo.last_heartbeat_details")
_roles("activity.cancel_details", "RespondActivityTaskCanceledRequest.details",
       "ActivityTaskCanceledEventAttributes.details")
_roles("failure", "ApplicationFailureInfo.details", "CanceledFailureInfo.details", "Failure.encoded_attributes")
_roles("marker", "RecordMarkerCommandAttributes.details", "MarkerRecordedEventAttributes.details")
_roles("memo", "Memo.fields")
_roles("header", "Header.fields")

# A plan step: (field name, kind, is_payload, role) where kind is "one" | "many" | "map" and
# role is None when the payloads inherit the enclosing field's role (``Payloads.payloads``).
_Step = tuple[str, str, bool, "str | None"]
_plans: dict[str, list[_Step]] = {}
_contains: dict[str, bool] = {}
# Where a message names the workflow (and namespace) its payloads belong to: (namespace field,
# workflow id field, whether that field is a WorkflowExecution); None when it names none.
_Scope = tuple["str | None", "str | None", bool]
_scopes: dict[str, _Scope | None] = {}


def _may_contain(desc: Descriptor, visiting: set[str]) -> bool:
    name = desc.full_name
    if name in _contains:
        return _contains[name]
    if name == _PAYLOAD:
        return True
    if name in _SKIP:
        return False
    if name in visiting:  # a recursive type (Failure.cause): decided by its other fields
        return False
    visiting.add(name)
    found = False
    for fd in desc.fields:
        sub = _field_message(fd)
        if sub is not None and _may_contain(sub, visiting):
            found = True
    visiting.discard(name)
    if not visiting:
        _contains[name] = found
    return found


def _field_message(fd: FieldDescriptor) -> Descriptor | None:
    if fd.type != FieldDescriptor.TYPE_MESSAGE:
        return None
    mt = fd.message_type
    if mt.GetOptions().map_entry:
        vfd = mt.fields_by_name["value"]
        return vfd.message_type if vfd.type == FieldDescriptor.TYPE_MESSAGE else None
    return mt


def _plan(desc: Descriptor) -> list[_Step]:
    plan = _plans.get(desc.full_name)
    if plan is not None:
        return plan
    plan = []
    _plans[desc.full_name] = plan  # registered before recursion so recursive types terminate
    for fd in desc.fields:
        sub = _field_message(fd)
        if sub is None or sub.full_name in _SKIP:
            continue
        is_payload = sub.full_name == _PAYLOAD
        if not is_payload and not _may_contain(sub, set()):
            continue
        if fd.message_type.GetOptions().map_entry:
            kind = "map"
        elif fd.is_repeated:
            kind = "many"
        else:
            kind = "one"
        role = None if desc.full_name == _PAYLOADS else _ROLES.get((desc.name, fd.name), fd.name)
        plan.append((fd.name, kind, is_payload, role))
    return plan


def _scope(desc: Descriptor) -> _Scope | None:
    name = desc.full_name
    if name in _scopes:
        return _scopes[name]
    fields = desc.fields_by_name
    ns_field = next((f for f in ("namespace", "workflow_namespace")
                     if f in fields and fields[f].type == FieldDescriptor.TYPE_STRING), None)
    wf_field: str | None = None
    is_execution = False
    if "workflow_id" in fields and fields["workflow_id"].type == FieldDescriptor.TYPE_STRING:
        wf_field = "workflow_id"
    else:
        for f in ("workflow_execution", "execution"):
            fd = fields.get(f)
            if fd is not None and fd.message_type is not None and fd.message_type.full_name == _EXECUTION:
                wf_field, is_execution = f, True
                break
    scope = (ns_field, wf_field, is_execution) if (ns_field or wf_field) else None
    _scopes[name] = scope
    return scope


def payload_role(message: str, field: str) -> str:
    """The role (context ``field``) of the payloads in ``message.field`` (e.g. ``"workflow.input"``)."""
    return _ROLES.get((message, field), field)


# ---------------------------------------------------------------------- collecting


def collect_payloads(msg: Message, out: list[pb.Payload] | None = None) -> list[pb.Payload]:
    """Every ``Payload`` reachable from ``msg`` (outside ``SearchAttributes``), depth first.

    The returned objects are the live sub-messages, so ``p.CopyFrom(new)`` edits ``msg``.
    """
    if out is None:
        out = []
    for name, kind, is_payload, _ in _plan(msg.DESCRIPTOR):
        if kind == "one":
            if not msg.HasField(name):
                continue
            sub = getattr(msg, name)
            if is_payload:
                out.append(sub)
            else:
                collect_payloads(sub, out)
        else:
            container = getattr(msg, name)
            items = container.values() if kind == "map" else container
            if is_payload:
                out.extend(items)
            else:
                for sub in items:
                    collect_payloads(sub, out)
    return out


class _Walk:
    """One depth-first walk that records each payload with its context, and the failures met."""

    def __init__(self, with_contexts: bool) -> None:
        self.payloads: list[pb.Payload] = []
        self.contexts: list[WorkflowSerializationContext] | None = [] if with_contexts else None
        self.failures: list[pb.Failure] = []
        self._made: dict[tuple[str, str, str], WorkflowSerializationContext] = {}

    def _context(self, ns: str, wf: str, role: str) -> WorkflowSerializationContext:
        key = (ns, wf, role)
        ctx = self._made.get(key)
        if ctx is None:
            ctx = self._made[key] = WorkflowSerializationContext(namespace=ns, workflow_id=wf, field=role)
        return ctx

    def visit(self, msg: Message, ns: str, wf: str, role: str) -> None:
        desc = msg.DESCRIPTOR
        contexts = self.contexts
        if contexts is not None:
            scope = _scopes[desc.full_name] if desc.full_name in _scopes else _scope(desc)
            if scope is not None:
                ns_field, wf_field, is_execution = scope
                if ns_field:
                    ns = getattr(msg, ns_field) or ns
                if wf_field:
                    value = getattr(msg, wf_field)
                    wf = (value.workflow_id if is_execution else value) or wf
        if desc.full_name == _FAILURE:
            self.failures.append(msg)
        payloads = self.payloads
        for name, kind, is_payload, step_role in _plan(desc):
            r = role if step_role is None else step_role
            if kind == "one":
                if not msg.HasField(name):
                    continue
                sub = getattr(msg, name)
                if is_payload:
                    payloads.append(sub)
                    if contexts is not None:
                        contexts.append(self._context(ns, wf, r))
                else:
                    self.visit(sub, ns, wf, r)
            elif kind == "map":
                for key, sub in getattr(msg, name).items():
                    keyed = f"{r}.{key}"
                    if is_payload:
                        payloads.append(sub)
                        if contexts is not None:
                            contexts.append(self._context(ns, wf, keyed))
                    else:
                        self.visit(sub, ns, wf, keyed)
            else:
                for sub in getattr(msg, name):
                    if is_payload:
                        payloads.append(sub)
                        if contexts is not None:
                            contexts.append(self._context(ns, wf, r))
                    else:
                        self.visit(sub, ns, wf, r)


def collect_with_contexts(msg: Message, context: WorkflowSerializationContext | None = None
                          ) -> list[tuple[pb.Payload, WorkflowSerializationContext]]:
    """Every payload of ``msg`` with its context (see the module docstring), depth first.

    ``context`` supplies the namespace and workflow id for the parts of ``msg`` that do not
    name them (its ``field`` is ignored).
    """
    walk = _Walk(with_contexts=True)
    walk.visit(msg, context.namespace if context else "", context.workflow_id if context else "", "")
    assert walk.contexts is not None
    return list(zip(walk.payloads, walk.contexts))


# ---------------------------------------------------------------------- encoding and decoding


def _needs_contexts(codecs: Sequence[PayloadCodec]) -> bool:
    return any(isinstance(c, WithSerializationContext) for c in codecs)


async def encode_message(codecs: Sequence[PayloadCodec], msg: Message, *,
                         context: WorkflowSerializationContext | None = None) -> None:
    """Encode, in place, every payload of ``msg`` with ``codecs`` (no-op without codecs).

    ``context`` names the namespace and workflow for the parts of ``msg`` that do not
    (see the module docstring). With a codec whose ``encode_common_attributes`` is set,
    failure messages and stack traces are moved into ``encoded_attributes`` first.

    Raises:
        ValueError: a codec refused a payload (e.g. a context it needs is missing).
    """
    if not codecs:
        return
    walk = _Walk(with_contexts=_needs_contexts(codecs))
    if any(getattr(c, "encode_common_attributes", False) for c in codecs):
        _move_common_attributes(msg)
    walk.visit(msg, context.namespace if context else "", context.workflow_id if context else "", "")
    if walk.payloads:
        _replace(walk.payloads, await encode_payloads(codecs, walk.payloads, walk.contexts))


async def decode_message(codecs: Sequence[PayloadCodec], msg: Message, *,
                         context: WorkflowSerializationContext | None = None) -> None:
    """Decode, in place, every payload of ``msg`` with ``codecs`` (no-op without codecs).

    Failures whose message and stack trace were encoded get them back.

    Raises:
        ValueError: a codec could not decode a payload (wrong key, corrupt data, a payload
            a strict codec refuses, one bound to another workflow or field).
    """
    if not codecs:
        return
    walk = _Walk(with_contexts=_needs_contexts(codecs))
    walk.visit(msg, context.namespace if context else "", context.workflow_id if context else "", "")
    if walk.payloads:
        _replace(walk.payloads, await decode_payloads(codecs, walk.payloads, walk.contexts))
    for failure in walk.failures:
        if failure.HasField("encoded_attributes"):
            _restore_common_attributes(failure)


def _replace(targets: list[pb.Payload], new: list[pb.Payload]) -> None:
    # Copy first: a codec may return the very objects it was given.
    fresh = [pb.Payload(metadata=p.metadata, data=p.data) for p in new]
    for target, value in zip(targets, fresh):
        target.CopyFrom(value)


# ---------------------------------------------------------------------- failure attributes


def _move_common_attributes(msg: Message) -> None:
    """Move every failure's message and stack trace into its ``encoded_attributes`` payload."""
    walk = _Walk(with_contexts=False)
    walk.visit(msg, "", "", "")
    for f in walk.failures:
        if f.HasField("encoded_attributes") or not (f.message or f.stack_trace):
            continue
        data = json.dumps({"message": f.message, "stack_trace": f.stack_trace}, ensure_ascii=False)
        f.encoded_attributes.CopyFrom(pb.Payload(metadata={"encoding": ENCODING_JSON}, data=data.encode()))
        f.message = ENCODED_FAILURE_MESSAGE
        f.stack_trace = ""


def _restore_common_attributes(f: pb.Failure) -> None:
    attrs = f.encoded_attributes
    if attrs.metadata.get("encoding") != ENCODING_JSON:
        return  # still encoded by a codec this side does not have: leave "Encoded failure"
    try:
        values: Any = json.loads(attrs.data)
    except ValueError:
        return
    if not isinstance(values, dict):
        return
    message, stack = values.get("message"), values.get("stack_trace")
    if isinstance(message, str):
        f.message = message
    if isinstance(stack, str):
        f.stack_trace = stack
    f.ClearField("encoded_attributes")
