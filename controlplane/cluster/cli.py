"""``spindle admin``: operator commands (registered through the ``spindle.cli`` entry-point group).

``spindle admin setup-schema --config FILE`` (or ``--project/--instance/--database``)
creates the Spanner database if needed and applies every schema version it lacks;
running it again changes nothing.

``spindle admin api-key new-secret`` prints a fresh API key secret without any server:
for ``auth.bootstrap_admin_key_file`` when the secret is kept elsewhere (Secret
Manager). The client commands ``api-key create|list|revoke`` come from the SDK's CLI
(``spindle._cli.register_api_keys``).
"""

from __future__ import annotations

import argparse
from typing import Any


def _group(sub: Any, name: str, help: str) -> Any:
    """The subcommands of group ``name`` under ``sub``, made here unless another plugin already did."""
    parser = sub.choices.get(name)
    if parser is None:
        parser = sub.add_parser(name, help=help)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return parser.add_subparsers(dest=f"{name.replace('-', '_')}_cmd", required=True, metavar="COMMAND")


def register(sub: Any) -> None:
    """Add the ``admin`` command group to the ``spindle`` parser."""
    asub = _group(sub, "admin", "operator commands (database schema, API keys)")
    keys = _group(asub, "api-key", "create, list and revoke API keys")
    secret = keys.add_parser("new-secret", help="print a new API key secret (no server involved)",
                             description="Print a fresh API key secret, for auth.bootstrap_admin_key_file when it "
                                         "is kept in a secret store. A server makes it a system_admin key at start.")
    secret.set_defaults(func=_new_secret)
    setup = asub.add_parser("setup-schema", help="create or upgrade the Cloud Spanner schema (idempotent)")
    setup.add_argument("--config", help="cluster YAML file (its store.spanner section)")
    setup.add_argument("--project")
    setup.add_argument("--instance")
    setup.add_argument("--database")
    setup.set_defaults(func=_setup_schema)


def _new_secret(args: argparse.Namespace) -> int:
    from spindle.controlplane.auth import format_secret, new_secret

    print(format_secret(new_secret()))
    return 0


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
