-- Generated from controlplane/store/schema/spanner_v6.sql by python scripts/gen_copies.py: do not edit this copy;
-- edit that file and run the script.
-- Spindle on Cloud Spanner, schema version 6 (applied after version 5).
--
-- Worker deployments (worker build versioning): one row per namespace and deployment name.
-- Doc is the deployment as JSON (its versions, the task queues their pollers polled, the
-- current and ramping version); Version rises with every write (optimistic updates).

CREATE TABLE WorkerDeployments (
  NamespaceId STRING(MAX) NOT NULL,
  Name STRING(MAX) NOT NULL,
  Version INT64 NOT NULL,
  Doc STRING(MAX) NOT NULL,
) PRIMARY KEY (NamespaceId, Name)
