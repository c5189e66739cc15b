# The server configuration (`spindle server start --config`) the members run with, as a ConfigMap.
#
# This file uses variables and locals only (no resources, no providers): tests/deploy evaluates it
# with Terraform offline and parses the result with Spindle's own configuration loader
# (spindle.controlplane.cluster._config.parse_config), so every key written here is one the
# server accepts.
#
# Each member's own addresses hold the placeholder __POD_NAME__, which the pod's init container
# replaces with the pod's name (StatefulSet pods have stable DNS names under the headless Service).

locals {
  # Container ports: the same numbers as the Dockerfile's EXPOSE (checked by tests/deploy).
  ports = {
    public   = 7233 # WorkflowService + grpc.health.v1.Health (clients, load balancer)
    internal = 7234 # members' internal listener (mutual TLS)
    metrics  = 9090 # Prometheus /metrics
  }

  # Where the files from Secret Manager are mounted in the pod (the CSI volume), by file name.
  secrets_dir = "/etc/spindle-secrets"
  secret_files = {
    bootstrap_admin_key = "bootstrap-admin-key"
    tls_cert            = "tls.crt"
    tls_key             = "tls.key"
    tls_ca              = "tls-ca.crt"
    member_cert         = "member.crt"
    member_key          = "member.key"
    member_ca           = "member-ca.crt"
  }
  # The ConfigMap is mounted here; the init container renders it into config_dir/config.yaml
  # (the path the image's CMD reads).
  config_template_dir = "/etc/spindle-template"
  config_dir          = "/etc/spindle"

  members_service = "${var.name}-members"
  member_host     = "__POD_NAME__.${local.members_service}.${var.kubernetes_namespace}.svc.cluster.local"

  server_config = {
    store = {
      spanner = {
        project  = var.project_id
        instance = var.spanner_instance
        database = var.spanner_database
      }
    }
    num_shards = var.num_shards
    listen     = "0.0.0.0:${local.ports.public}"
    advertise  = "${local.member_host}:${local.ports.public}"
    lease = {
      ttl            = var.lease_ttl
      renew_interval = var.lease_renew_interval
    }
    namespaces = var.namespaces
    log_level  = var.log_level
    server     = var.server_settings
    archival = merge(
      var.archive_uri != "" ? { uri = var.archive_uri } : {},
      var.blob_store_uri != "" ? { blob_store_uri = var.blob_store_uri } : {},
      length(var.archival_allowed_roots) > 0 ? { allowed_roots = var.archival_allowed_roots } : {},
    )
    auth = {
      mode                     = "api_keys"
      bootstrap_admin_key_file = "${local.secrets_dir}/${local.secret_files.bootstrap_admin_key}"
    }
    tls = {
      cert_file = "${local.secrets_dir}/${local.secret_files.tls_cert}"
      key_file  = "${local.secrets_dir}/${local.secret_files.tls_key}"
    }
    internal = {
      listen    = "0.0.0.0:${local.ports.internal}"
      advertise = "${local.member_host}:${local.ports.internal}"
      tls = {
        cert_file   = "${local.secrets_dir}/${local.secret_files.member_cert}"
        key_file    = "${local.secrets_dir}/${local.secret_files.member_key}"
        ca_file     = "${local.secrets_dir}/${local.secret_files.member_ca}"
        server_name = var.member_tls_server_name
      }
    }
    metrics = {
      listen = "0.0.0.0:${local.ports.metrics}"
    }
  }

  server_config_yaml = yamlencode(local.server_config)
}

# What the pod runs besides the image's entrypoint; kept here (no resources) so that
# tests/deploy can run them: the init container's rendering of the per-member addresses,
# the server's arguments, and the health probe's settings.
locals {
  render_config_command = [
    "sh", "-c",
    "sed \"s/__POD_NAME__/$POD_NAME/g\" ${local.config_template_dir}/config.yaml > ${local.config_dir}/config.yaml",
  ]

  # Appended to the image's ENTRYPOINT (spindle server start), replacing its CMD.
  server_args = ["--config", "${local.config_dir}/config.yaml", "--log-format", var.log_format]

  # deploy/healthcheck.py (spindle-healthcheck in the image): grpc.health.v1 over TLS.
  healthcheck_env = {
    SPINDLE_HEALTHCHECK_ADDRESS     = "127.0.0.1:${local.ports.public}"
    SPINDLE_HEALTHCHECK_CA_FILE     = "${local.secrets_dir}/${local.secret_files.tls_ca}"
    SPINDLE_HEALTHCHECK_SERVER_NAME = var.public_hostname
  }
}
