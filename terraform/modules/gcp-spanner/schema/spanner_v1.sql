-- Generated from controlplane/store/schema/spanner_v1.sql by python scripts/gen_copies.py: do not edit this copy;
-- edit that file and run the script.
-- Spindle on Cloud Spanner, schema version 1.
--
-- Applied by spindle.controlplane.store._spanner_schema.setup_schema (``spindle admin
-- setup-schema``), which records each applied version in SchemaVersion, so running
-- it again is a no-op. Statements are separated by semicolons at the end of a line.
--
-- Per-shard data is interleaved under its shard row: one shard's executions,
-- histories and task queues are stored together and every transaction of the
-- history engine stays inside one split. Everything a shard writes is fenced by
-- Shards.RangeId (see controlplane/store/_spanner_write.py).

CREATE TABLE SchemaVersion (
  Version INT64 NOT NULL,
  Description STRING(MAX) NOT NULL,
  AppliedAt TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (Version);

-- Settings fixed for the life of the database (num_shards).
CREATE TABLE ClusterMeta (
  Key STRING(MAX) NOT NULL,
  Value STRING(MAX) NOT NULL,
) PRIMARY KEY (Key);

-- One row per history shard. RangeId is the fencing token: it grows on every
-- change of owner, and every write of the shard checks it. Owner/LeaseExpiryMs
-- form the shard's lease (spindle.controlplane.cluster).
CREATE TABLE Shards (
  ShardId INT64 NOT NULL,
  RangeId INT64 NOT NULL,
  Owner STRING(MAX) NOT NULL,
  LeaseExpiryMs INT64 NOT NULL,
  UpdateTime TIMESTAMP OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (ShardId);

-- Processes of the control plane and their last heartbeat.
CREATE TABLE ClusterMembers (
  MemberId STRING(MAX) NOT NULL,
  Address STRING(MAX) NOT NULL,
  HeartbeatMs INT64 NOT NULL,
  StartedMs INT64 NOT NULL,
  HeartbeatTime TIMESTAMP OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (MemberId);

CREATE TABLE Executions (
  ShardId INT64 NOT NULL,
  NamespaceId STRING(MAX) NOT NULL,
  WorkflowId STRING(MAX) NOT NULL,
  RunId STRING(MAX) NOT NULL,
  Status INT64 NOT NULL,
  NextEventId INT64 NOT NULL,
  DbVersion INT64 NOT NULL,
  WorkflowType STRING(MAX) NOT NULL,
  TaskQueue STRING(MAX) NOT NULL,
  StartTimeMs INT64 NOT NULL,
  CloseTimeMs INT64 NOT NULL,
  UpdateTime TIMESTAMP OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (ShardId, NamespaceId, WorkflowId, RunId),
  INTERLEAVE IN PARENT Shards ON DELETE CASCADE;

-- Finds a run's shard from (namespace, workflow id, run id).
CREATE UNIQUE NULL_FILTERED INDEX ExecutionsByRun ON Executions (NamespaceId, WorkflowId, RunId);

CREATE INDEX ExecutionsByStatus ON Executions (ShardId, Status), INTERLEAVE IN Shards;

-- The history: append-only, event ids 1, 2, 3, ... WriteTime is the commit timestamp.
CREATE TABLE Events (
  ShardId INT64 NOT NULL,
  NamespaceId STRING(MAX) NOT NULL,
  WorkflowId STRING(MAX) NOT NULL,
  RunId STRING(MAX) NOT NULL,
  EventId INT64 NOT NULL,
  Data BYTES(MAX) NOT NULL,
  WriteTime TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (ShardId, NamespaceId, WorkflowId, RunId, EventId),
  INTERLEAVE IN PARENT Executions ON DELETE CASCADE;

-- Events that arrived while a workflow task was running.
CREATE TABLE BufferedEvents (
  ShardId INT64 NOT NULL,
  NamespaceId STRING(MAX) NOT NULL,
  WorkflowId STRING(MAX) NOT NULL,
  RunId STRING(MAX) NOT NULL,
  Seq INT64 NOT NULL,
  Data BYTES(MAX) NOT NULL,
  WriteTime TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (ShardId, NamespaceId, WorkflowId, RunId, Seq),
  INTERLEAVE IN PARENT Executions ON DELETE CASCADE;

-- The run a workflow id currently points at.
CREATE TABLE CurrentExecutions (
  NamespaceId STRING(MAX) NOT NULL,
  WorkflowId STRING(MAX) NOT NULL,
  RunId STRING(MAX) NOT NULL,
  Status INT64 NOT NULL,
  StartRequestId STRING(MAX) NOT NULL,
) PRIMARY KEY (NamespaceId, WorkflowId);

CREATE INDEX CurrentExecutionsByStatus ON CurrentExecutions (NamespaceId, Status);

-- Transactional outbox of the shard.
CREATE TABLE TransferTasks (
  ShardId INT64 NOT NULL,
  TaskId INT64 NOT NULL,
  Data STRING(MAX) NOT NULL,
  CreateTime TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (ShardId, TaskId),
  INTERLEAVE IN PARENT Shards ON DELETE CASCADE;

-- Durable timers of the shard, in firing order. CreateTime is the commit timestamp.
CREATE TABLE TimerTasks (
  ShardId INT64 NOT NULL,
  FireTimeMs INT64 NOT NULL,
  TaskId INT64 NOT NULL,
  Data STRING(MAX) NOT NULL,
  CreateTime TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (ShardId, FireTimeMs, TaskId),
  INTERLEAVE IN PARENT Shards ON DELETE CASCADE;

-- Tasks waiting for a worker (no poller was waiting when they were dispatched).
-- Task ids are unique per shard, so the shard is part of the key.
CREATE TABLE TaskBacklog (
  NamespaceId STRING(MAX) NOT NULL,
  TaskQueue STRING(MAX) NOT NULL,
  Kind INT64 NOT NULL,
  ShardId INT64 NOT NULL,
  TaskId INT64 NOT NULL,
  Data STRING(MAX) NOT NULL,
  CreateTime TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (NamespaceId, TaskQueue, Kind, ShardId, TaskId);

CREATE TABLE Namespaces (
  Name STRING(MAX) NOT NULL,
  Id STRING(MAX) NOT NULL,
  Data STRING(MAX) NOT NULL,
  State STRING(MAX) NOT NULL,
  Version INT64 NOT NULL,
) PRIMARY KEY (Name);

CREATE UNIQUE INDEX NamespacesById ON Namespaces (Id);

-- Visibility: snake_case columns, the names spindle.controlplane.visibility.compile_query targets.
CREATE TABLE Visibility (
  namespace_id STRING(MAX) NOT NULL,
  run_id STRING(MAX) NOT NULL,
  workflow_id STRING(MAX) NOT NULL,
  workflow_type STRING(MAX) NOT NULL,
  status INT64 NOT NULL,
  task_queue STRING(MAX) NOT NULL,
  start_time_ms INT64 NOT NULL,
  close_time_ms INT64,
  execution_duration_ms INT64,
  history_length INT64 NOT NULL,
  search_attributes JSON,
  memo BYTES(MAX),
  parent_workflow_id STRING(MAX) NOT NULL,
  parent_run_id STRING(MAX) NOT NULL,
) PRIMARY KEY (namespace_id, run_id);

CREATE INDEX VisibilityByStart ON Visibility (namespace_id, start_time_ms DESC, run_id);
CREATE INDEX VisibilityByStatus ON Visibility (namespace_id, status, start_time_ms DESC);
CREATE INDEX VisibilityByType ON Visibility (namespace_id, workflow_type, start_time_ms DESC);
CREATE INDEX VisibilityByWorkflowId ON Visibility (namespace_id, workflow_id);
CREATE INDEX VisibilityByClose ON Visibility (namespace_id, close_time_ms);
CREATE INDEX VisibilityByQueue ON Visibility (namespace_id, task_queue, start_time_ms DESC)
