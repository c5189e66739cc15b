"""``spindle admin``: operator commands (registered through the ``spindle.cli`` entry-point group).

``spindle admin setup-schema --config FILE`` (or ``--project/--instance/--database``)
creates the Spanner database if needed and applies every schema version it lacks;
running it again changes nothing.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    """Add the ``admin`` command group to the ``spindle`` parser."""
    admin = sub.add_parser("admin", help="operator commands (database schema)")
    asub = admin.add_subparsers(dest="admin_cmd", required=True, metavar="COMMAND")
    setup = asub.add_parser("setup-schema", help="create or upgrade the Cloud Spanner schema (idempotent)")
    setup.add_argument("--config", help="cluster YAML file (its store.spanner section)")
    setup.add_argument("--project")
    setup.add_argument("--instance")
    setup.add_argument("--database")
    setup.set_defaults(func=_setup_schema)


def _setup_schema(args: argparse.Namespace) -> int:
    from spindle.controlplane.cli import CliError

    project, instance, database = args.project, args.instance, args.database
    if args.config:
        from ._config import ConfigError, load_config

        try:
            cfg = load_config(args.config)
        except ConfigError as e:
            raise CliError(str(e)) from None
        if cfg.store.kind != "spanner":
            raise CliError(f"{args.config}: store is {cfg.store.kind}; setup-schema is for Spanner (SQLite needs none)")
        project, instance, database = (project or cfg.store.project, instance or cfg.store.instance,
                                       database or cfg.store.database)
    if not (project and instance and database):
        raise CliError("setup-schema: give --config FILE or all of --project, --instance and --database")
    try:
        from google.cloud import spanner
    except ImportError:
        raise CliError("google-cloud-spanner is not installed (pip install 'spindle[spanner]')") from None
    from spindle.controlplane.store._spanner_schema import setup_schema
    from spindle.controlplane.store.spanner import configure_emulator_env

    configure_emulator_env()
    db = spanner.Client(project=project).instance(instance).database(database)
    try:
        result = setup_schema(db)
    except Exception as e:  # noqa: BLE001 - one line for the operator
        raise CliError(f"setup-schema failed: {type(e).__name__}: {e}") from None
    what = "created database; " if result.created_database else ""
    if result.applied:
        print(f"{what}schema version {result.from_version} -> {result.to_version} "
              f"(applied {', '.join(map(str, result.applied))})")
    else:
        print(f"{what}schema is up to date (version {result.to_version})")
    return 0


__all__ = ["register"]
