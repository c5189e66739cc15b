"""``spindle admin setup-schema``: create or upgrade a cluster's Cloud Spanner schema."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spindle.controlplane.store._spanner_schema import SchemaResult


def setup_spanner_schema(project: str, instance: str, database: str) -> SchemaResult:
    """Create the database if missing and bring its schema to the latest version (idempotent).

    Honours ``SPANNER_EMULATOR_HOST`` (the emulator needs no credentials).

    Raises:
        ImportError: google-cloud-spanner is not installed.
        RuntimeError: the database has a newer schema than this build knows.
        google.api_core.exceptions.GoogleAPICallError: Spanner refused a call.
    """
    from google.cloud import spanner

    from spindle.controlplane.store._spanner_schema import setup_schema
    from spindle.controlplane.store.spanner import configure_emulator_env

    configure_emulator_env()
    return setup_schema(spanner.Client(project=project).instance(instance).database(database))
