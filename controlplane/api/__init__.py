"""The wire API (package ``spindle.v1``): the generated protobuf/gRPC modules, and the metadata keys statuses use.

Import as ``from spindle.controlplane.api import messages_pb2 as pb, service_pb2 as svc, service_pb2_grpc``.
"""

#: Trailing-metadata key of a serialized ``messages_pb2.WorkflowExecutionAlreadyStartedFailure``: sent with
#: ALREADY_EXISTS when a start is refused because a run with the workflow id exists (its run id, and the
#: request id that started it), by the embedded stub, a server and a cluster member forwarding the call.
WORKFLOW_ALREADY_STARTED_KEY = "spindle-workflow-already-started-bin"

__all__ = ["WORKFLOW_ALREADY_STARTED_KEY"]
