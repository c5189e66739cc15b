-- Spindle on Cloud Spanner, schema version 7 (applied after version 6).
--
-- ApiKeys.TaskQueues: the task queues a key's worker grants are confined to, as JSON
-- {namespace: [task queue, ...]}; NULL or a namespace missing from it = every task queue.
--
-- BatchJobs: server-side batch jobs (data-subject erasure): one row per namespace and job
-- id. Data is the job as a serialized protobuf (its request and its progress); State is the
-- job's state (running, completed, failed), so a member can find the jobs to resume without
-- reading every row; Version rises with every write (optimistic updates).

ALTER TABLE ApiKeys ADD COLUMN TaskQueues STRING(MAX);

CREATE TABLE BatchJobs (
  NamespaceId STRING(MAX) NOT NULL,
  JobId STRING(MAX) NOT NULL,
  Version INT64 NOT NULL,
  State INT64 NOT NULL,
  Data BYTES(MAX) NOT NULL,
) PRIMARY KEY (NamespaceId, JobId)
