"""Workflow execution messages, where Temporal code imports them from (``temporalio.api.workflow.v1``).

``WorkflowExecutionInfo`` is what ``DescribeWorkflowExecutionResponse.workflow_execution_info`` holds (its
``versioning_info`` says which build runs the execution); ``WorkflowExecutionOptions`` and
``VersioningOverride`` are what ``UpdateWorkflowExecutionOptionsRequest`` changes.
"""

from spindle.api.messages_pb2 import VersioningOverride, WorkflowExecutionVersioningInfo
from spindle.api.service_pb2 import WorkflowExecutionInfo, WorkflowExecutionOptions

__all__ = ["VersioningOverride", "WorkflowExecutionInfo", "WorkflowExecutionOptions", "WorkflowExecutionVersioningInfo"]
