"""Activity retry decisions, computed by the server from the activity's retry policy."""

from __future__ import annotations

import math

from dataclasses import dataclass

from spindle.api import messages_pb2 as pb


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    backoff_ms: int
    state: pb.RetryState


def normalized_policy(policy: pb.RetryPolicy | None, *, default_initial_ms: int, backoff: float, max_factor: float) -> pb.RetryPolicy:
    """Fill unset fields with defaults (initial 1 s, x2, max 100 x initial, unlimited attempts)."""
    out = pb.RetryPolicy()
    if policy is not None:
        out.CopyFrom(policy)
    if out.initial_interval_ms <= 0:
        out.initial_interval_ms = default_initial_ms
    if out.backoff_coefficient < 1.0:
        out.backoff_coefficient = backoff
    if out.maximum_interval_ms <= 0:
        out.maximum_interval_ms = int(out.initial_interval_ms * max_factor)
    return out


def decide(
    policy: pb.RetryPolicy,
    *,
    attempt: int,
    failure: pb.Failure | None,
    now_ms: int,
    schedule_to_close_deadline_ms: int,
    timeout: bool = False,
) -> RetryDecision:
    """Whether the failed ``attempt`` (1-based) is retried, after what backoff, and why not if not."""
    if failure is not None and failure.HasField("application_failure_info"):
        info = failure.application_failure_info
        if info.non_retryable or (info.type and info.type in policy.non_retryable_error_types):
            return RetryDecision(False, 0, pb.RETRY_STATE_NON_RETRYABLE_FAILURE)
    if policy.maximum_attempts > 0 and attempt >= policy.maximum_attempts:
        return RetryDecision(False, 0, pb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED)
    try:
        backoff = policy.initial_interval_ms * (policy.backoff_coefficient ** (attempt - 1))
    except OverflowError:  # attempt 1,025 at x2, or 104 at x1000: long past the maximum interval
        backoff = math.inf
    backoff_ms = int(min(backoff, policy.maximum_interval_ms))
    if failure is not None and failure.HasField("application_failure_info") and failure.application_failure_info.next_retry_delay_ms > 0:
        backoff_ms = failure.application_failure_info.next_retry_delay_ms
    if schedule_to_close_deadline_ms and now_ms + backoff_ms >= schedule_to_close_deadline_ms:
        return RetryDecision(False, 0, pb.RETRY_STATE_TIMEOUT)
    return RetryDecision(True, backoff_ms, pb.RETRY_STATE_IN_PROGRESS)
