"""The wire API (package ``spindle.v1``): the generated protobuf/gRPC modules, and the metadata keys statuses use.

Import as ``from spindle.controlplane.api import messages_pb2 as pb, service_pb2 as svc, service_pb2_grpc``.
"""

#: Trailing-metadata key of a serialized ``messages_pb2.WorkflowExecutionAlreadyStartedFailure``: sent with
#: ALREADY_EXISTS when a start is refused because a run with the workflow id exists (its run id, and the
#: request id that started it), by the embedded stub, a server and a cluster member forwarding the call.
WORKFLOW_ALREADY_STARTED_KEY = "spindle-workflow-already-started-bin"

#: Trailing-metadata key of a throttled call's retry delay, in whole milliseconds (ASCII digits): sent
#: with RESOURCE_EXHAUSTED when retrying later will pass (a namespace's request rate limit), next to the
#: same delay as a ``google.rpc.RetryInfo`` in the standard status details (``grpc-status-details-bin``).
#: A RESOURCE_EXHAUSTED without it (e.g. a payload over the size limit) will not pass on a retry.
RETRY_AFTER_KEY = "spindle-retry-after-ms"

__all__ = ["RETRY_AFTER_KEY", "WORKFLOW_ALREADY_STARTED_KEY"]
