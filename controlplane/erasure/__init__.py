"""Data-subject erasure (issue 26): durable server-side jobs that delete the executions a query selects.

- ``_jobs``: the job record on the store's ``batch_jobs`` rows and its state transitions
  (``ErasureJobs``: start, describe, list, save);
- ``_runner``: ``ErasureRunner``, one task per running job this member owns, resumed after a
  restart from its last durable write;
- ``_archive``: the archive's erasure helper, looked up when used;
- ``_wiring``: ``erasure_runner``, how a server builds its runner.

One run is erased by the history operation ``history.ops.erase`` (``DeleteWorkflowExecution``);
the RPCs are the frontend's ``_erasure_calls``.
"""

from ._jobs import COMPLETED, FAILED, RUNNING, ErasureJobs, Job
from ._runner import JOB_PRINCIPAL, ErasureRunner
from ._wiring import erasure_runner

__all__ = ["COMPLETED", "FAILED", "JOB_PRINCIPAL", "RUNNING", "ErasureJobs", "ErasureRunner", "Job", "erasure_runner"]
