-- Generated from controlplane/store/schema/spanner_v2.sql by python scripts/gen_copies.py: do not edit this copy;
-- edit that file and run the script.
-- Spindle on Cloud Spanner, schema version 2 (applied after version 1).
--
-- Retried activity attempts no longer write history events (issue 13): the attempt
-- count and last failure of an execution's pending activities are kept on its row,
-- a serialized spindle.v1.ActivityRetryState (NULL or empty when none is retrying).

ALTER TABLE Executions ADD COLUMN ActivityState BYTES(MAX)
