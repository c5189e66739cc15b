-- Generated from controlplane/store/schema/spanner_v4.sql by python scripts/gen_copies.py: do not edit this copy;
-- edit that file and run the script.
-- Spindle on Cloud Spanner, schema version 4 (applied after version 3).
--
-- BlobRefs: which run refers to which large-payload blob (issue 16). A row is written
-- with the events (or execution row) that hold the reference and deleted with the run
-- by retention; a blob no row refers to any more is deleted from the blob store.

CREATE TABLE BlobRefs (
  NamespaceId STRING(MAX) NOT NULL,
  WorkflowId STRING(MAX) NOT NULL,
  RunId STRING(MAX) NOT NULL,
  BlobKey STRING(MAX) NOT NULL,
) PRIMARY KEY (NamespaceId, WorkflowId, RunId, BlobKey);

CREATE INDEX BlobRefsByKey ON BlobRefs (NamespaceId, BlobKey)
