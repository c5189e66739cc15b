-- Generated from controlplane/store/schema/spanner_v3.sql by python scripts/gen_copies.py: do not edit this copy;
-- edit that file and run the script.
-- Spindle on Cloud Spanner, schema version 3 (applied after version 2).
--
-- Identity and access (issue 15). ApiKeys holds API keys as a keyed hash of their
-- secret (never the secret itself), their grants {namespace: role} as JSON, expiry and
-- revocation (epoch milliseconds, 0 = never / not revoked). ServerSecrets holds the
-- per-deployment secrets every member shares: the keys that sign task tokens and the
-- pepper of API-key hashes; a row is written once and never changed.

CREATE TABLE ApiKeys (
  KeyId STRING(64) NOT NULL,
  Name STRING(MAX) NOT NULL,
  SecretHash BYTES(64) NOT NULL,
  Grants STRING(MAX) NOT NULL,
  SystemAdmin BOOL NOT NULL,
  CreateTimeMs INT64 NOT NULL,
  ExpireTimeMs INT64 NOT NULL,
  RevokeTimeMs INT64 NOT NULL,
  CreatedBy STRING(MAX) NOT NULL,
) PRIMARY KEY (KeyId);

CREATE TABLE ServerSecrets (
  Name STRING(200) NOT NULL,
  Value BYTES(MAX) NOT NULL,
  CreateTimeMs INT64 NOT NULL,
) PRIMARY KEY (Name)
