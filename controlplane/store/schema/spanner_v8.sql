-- Spindle on Cloud Spanner, schema version 8 (applied after version 7).
--
-- NexusEndpoints: the Nexus endpoint registry (issue 30; docs/NEXUS.md): one row per endpoint
-- id. Name is unique (the index). Data is the endpoint as a serialized protobuf
-- (spindle.v1.Endpoint); Version rises with every write (optimistic updates).

CREATE TABLE NexusEndpoints (
  Id STRING(MAX) NOT NULL,
  Name STRING(MAX) NOT NULL,
  Version INT64 NOT NULL,
  Data BYTES(MAX) NOT NULL,
) PRIMARY KEY (Id);

CREATE UNIQUE INDEX NexusEndpointsByName ON NexusEndpoints (Name)
