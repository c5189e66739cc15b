-- Generated from controlplane/store/schema/spanner_v5.sql by python scripts/gen_copies.py: do not edit this copy;
-- edit that file and run the script.
-- Spindle on Cloud Spanner, schema version 5 (applied after version 4).
--
-- Schedules (issue 17): one row per schedule, keyed by namespace and schedule id. Data is
-- the serialized spindle.v1.ScheduleRecord (spec, state, info, pending timer); Version rises
-- with every write (optimistic updates). The schedule's timer row lives in TimerTasks on
-- ShardId (the shard of its schedule id) and is written in the same transaction.

CREATE TABLE Schedules (
  NamespaceId STRING(MAX) NOT NULL,
  ScheduleId STRING(MAX) NOT NULL,
  ShardId INT64 NOT NULL,
  Version INT64 NOT NULL,
  Data BYTES(MAX) NOT NULL,
  UpdateTime TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (NamespaceId, ScheduleId)
