"""The wire API (protobuf package ``spindle.v1``): the ``.proto`` files, the protobuf/gRPC modules
generated from them (``scripts/gen_proto.sh``), and the metadata keys statuses use.

Import as ``from spindle.api import messages_pb2 as pb, service_pb2 as svc, service_pb2_grpc``.
This is the SDK's public surface and the server's contract: the control plane imports it, the SDK
talks to the server only through it. ``spindle.api.common.v1`` re-exports the payload messages
under the module path ported Temporal codecs import them from (``temporalio.api.common.v1``).
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
