"""Closing commands: COMPLETE, FAIL, CANCEL and CONTINUE_AS_NEW of the workflow execution itself."""

from __future__ import annotations

from spindle.api import messages_pb2 as pb

__all__ = ["complete_workflow_command", "fail_workflow_command", "cancel_workflow_command",
           "continue_as_new_command"]


def complete_workflow_command(result: pb.Payloads) -> pb.Command:
    """COMPLETE_WORKFLOW_EXECUTION with the run method's encoded result."""
    return pb.Command(
        command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
        complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes(result=result))


def fail_workflow_command(failure: pb.Failure) -> pb.Command:
    """FAIL_WORKFLOW_EXECUTION with the encoded error."""
    return pb.Command(
        command_type=pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION,
        fail_workflow_execution_command_attributes=pb.FailWorkflowExecutionCommandAttributes(failure=failure))


def cancel_workflow_command() -> pb.Command:
    """CANCEL_WORKFLOW_EXECUTION: the run ended by the cancellation that was requested."""
    return pb.Command(command_type=pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION,
                      cancel_workflow_execution_command_attributes=pb.CancelWorkflowExecutionCommandAttributes())


def continue_as_new_command(attrs: pb.ContinueAsNewWorkflowExecutionCommandAttributes) -> pb.Command:
    """CONTINUE_AS_NEW_WORKFLOW_EXECUTION with what ``workflow.continue_as_new`` was given."""
    return pb.Command(command_type=pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
                      continue_as_new_workflow_execution_command_attributes=attrs)
