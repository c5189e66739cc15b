"""Several control-plane processes on one Spanner database: membership, shard leases, routing.

See ``README.md`` in this directory for the design. This package is one of the control plane's
entry points: ``run_from_config`` backs ``spindle server start --config FILE``,
``setup_spanner_schema`` backs ``spindle admin setup-schema``, ``ClusterNode`` runs a member
in-process.
"""

from ._config import ClusterConfig, ConfigError, InternalConfig, StoreConfig, load_config, parse_config
from ._leases import LeaseManager, assign_shards, rendezvous_owner
from ._node import ClusterNode, StartupError, make_store, run_from_config
from ._schema_setup import setup_spanner_schema

__all__ = ["ClusterConfig", "ClusterNode", "ConfigError", "InternalConfig", "LeaseManager", "StartupError", "StoreConfig", "assign_shards",
           "load_config", "make_store", "parse_config", "rendezvous_owner", "run_from_config", "setup_spanner_schema"]
