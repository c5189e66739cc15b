variable "project_id" {
  description = "Google Cloud project of the cluster, the secrets and the Spanner database (the gcp-spanner module's project)."
  type        = string
}

variable "region" {
  description = "Region of the GKE Autopilot cluster (Autopilot clusters are regional), e.g. \"us-central1\". Keep it next to the Spanner instance."
  type        = string
}

variable "name" {
  description = "Name of the cluster's Kubernetes objects (StatefulSet, Services, ConfigMap, ...) and prefix of the cluster and Secret Manager secret names. Lowercase letters, digits and '-', starting with a letter."
  type        = string
  default     = "spindle"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,19}$", var.name))
    error_message = "name: 1-20 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "labels" {
  description = "Labels added to the cluster and the Secret Manager secrets (app = \"spindle\" is always set)."
  type        = map(string)
  default     = {}
}

# ---------------------------------------------------------------- from the gcp-spanner module

variable "spanner_instance" {
  description = "Spanner instance ID of the Spindle database (module.<gcp-spanner>.spanner_instance)."
  type        = string
}

variable "spanner_database" {
  description = "Spanner database name (module.<gcp-spanner>.spanner_database)."
  type        = string
}

variable "service_account_email" {
  description = "Email of the control plane's service account (module.<gcp-spanner>.service_account_email): the pods run as it through Workload Identity, and it may read the module's secrets."
  type        = string
}

variable "archive_uri" {
  description = "Server-wide archive of closed runs (archival.uri), e.g. module.<gcp-spanner>.archival_uri; \"\" deletes at retention without archiving."
  type        = string
  default     = ""

  validation {
    condition     = var.archive_uri == "" || startswith(var.archive_uri, "gs://")
    error_message = "archive_uri: a gs://bucket/prefix URI, or \"\"."
  }
}

variable "blob_store_uri" {
  description = "Where payloads over the large-payload threshold are kept (archival.blob_store_uri), e.g. \"gs://BUCKET/blobs\" in the gcp-spanner module's bucket; \"\" keeps every payload inline."
  type        = string
  default     = ""

  validation {
    condition     = var.blob_store_uri == "" || startswith(var.blob_store_uri, "gs://")
    error_message = "blob_store_uri: a gs://bucket/prefix URI, or \"\"."
  }
}

variable "archival_allowed_roots" {
  description = "Where namespaces may set their own archival_uri (archival.allowed_roots), gs://bucket or gs://bucket/prefix URIs; empty: nowhere."
  type        = list(string)
  default     = []
}

# ---------------------------------------------------------------- cluster

variable "cluster_name" {
  description = "Name of the GKE Autopilot cluster; null for \"<name>-cp\"."
  type        = string
  default     = null
}

variable "network" {
  description = "VPC network of the cluster (name or self link); null for the project's \"default\" network."
  type        = string
  default     = null
}

variable "subnetwork" {
  description = "Subnetwork of the cluster (name or self link); null lets GKE choose the region's subnetwork of network."
  type        = string
  default     = null
}

variable "release_channel" {
  description = "GKE release channel of the cluster: RAPID, REGULAR or STABLE (Autopilot upgrades nodes itself; the PodDisruptionBudget keeps members up during upgrades)."
  type        = string
  default     = "REGULAR"

  validation {
    condition     = contains(["RAPID", "REGULAR", "STABLE"], var.release_channel)
    error_message = "release_channel: RAPID, REGULAR or STABLE."
  }
}

variable "cluster_deletion_protection" {
  description = "Refuse to destroy the GKE cluster from Terraform (set false only for throwaway environments)."
  type        = bool
  default     = true
}

variable "kubernetes_namespace" {
  description = "Kubernetes namespace the control plane runs in (created by the module)."
  type        = string
  default     = "spindle"
}

variable "kubernetes_service_account" {
  description = "Name of the Kubernetes service account of the pods, bound to service_account_email by Workload Identity."
  type        = string
  default     = "spindle-server"
}

# ---------------------------------------------------------------- the control plane

variable "image" {
  description = "Container image of the control plane, built from the repository's Dockerfile, e.g. \"us-central1-docker.pkg.dev/PROJECT/spindle/spindle:0.1.0\". Changing it rolls the members one at a time."
  type        = string
}

variable "replicas" {
  description = "Number of control-plane members (StatefulSet replicas). At least 2, so that a rolling update or a node upgrade always leaves a member owning shards; at most num_shards."
  type        = number
  default     = 3

  validation {
    condition     = var.replicas >= 2 && floor(var.replicas) == var.replicas
    error_message = "replicas: a whole number, at least 2 (one member may be down during rolling updates)."
  }
}

variable "num_shards" {
  description = "History shards of the cluster (num_shards). Fixed for the life of the database: changing it later is refused by the server."
  type        = number
  default     = 16

  validation {
    condition     = var.num_shards >= 1 && var.num_shards <= 65536 && floor(var.num_shards) == var.num_shards
    error_message = "num_shards: a whole number from 1 to 65536."
  }
}

variable "namespaces" {
  description = "Spindle namespaces created at start if missing (namespaces)."
  type        = list(string)
  default     = ["default"]
}

variable "lease_ttl" {
  description = "Shard lease time to live (lease.ttl), e.g. \"10s\": how long a crashed member's shards wait before another member takes them."
  type        = string
  default     = "10s"
}

variable "lease_renew_interval" {
  description = "How often a member renews its shard leases (lease.renew_interval), e.g. \"2s\"; the ttl must be more than twice this."
  type        = string
  default     = "2s"
}

variable "log_level" {
  description = "Server log level (log_level): debug, info, warning or error."
  type        = string
  default     = "info"

  validation {
    condition     = contains(["debug", "info", "warning", "error"], var.log_level)
    error_message = "log_level: debug, info, warning or error."
  }
}

variable "log_format" {
  description = "Log line format on stderr (the --log-format flag of spindle server start): json (one object per line, what Cloud Logging parses) or text."
  type        = string
  default     = "json"

  validation {
    condition     = contains(["json", "text"], var.log_format)
    error_message = "log_format: json or text."
  }
}

variable "server_settings" {
  description = "Server tunables (the server: section; fields of spindle.controlplane.config.ServerConfig), e.g. { long_poll_timeout = 60 }. num_shards and the archival URIs have their own variables."
  type        = any
  default     = {}

  validation {
    # The fields of ServerConfig (controlplane/config.py) but the ones set by other variables;
    # tests/deploy/test_gke_module.py fails when this list and ServerConfig differ.
    condition = alltrue([for k in keys(var.server_settings) : contains([
      "long_poll_timeout",
      "default_workflow_task_timeout",
      "sticky_schedule_to_start_timeout",
      "max_payload_bytes",
      "large_payload_threshold_bytes",
      "max_offloaded_payload_bytes",
      "archival_retry_interval",
      "object_store_timeout",
      "max_id_length",
      "history_warn_events",
      "history_max_events",
      "history_max_bytes",
      "history_page_max_bytes",
      "default_retention_days",
      "timer_preload_window",
      "query_timeout",
      "update_timeout",
      "start_admission_wait",
      "start_admission_max_pending",
      "start_admission_per_worker",
      "namespace_rps_limit",
      "namespace_rps_limit_max",
      "namespace_max_schedules",
      "namespace_max_buffered_actions",
      "task_queue_min_rate",
      "task_queue_max_rate",
      "max_connections",
      "max_connection_idle",
      "max_connection_age",
      "connection_handshake_timeout",
      "keepalive_time",
      "keepalive_timeout",
      "max_long_polls",
      "max_long_polls_per_client",
      "long_poll_namespace_share",
      "metrics_task_queue_labels_per_namespace",
      "execution_cache_size",
      "max_commit_batch",
      "default_activity_retry_initial_interval",
      "default_activity_retry_backoff",
      "default_activity_retry_maximum_interval_factor",
    ], k)])
    error_message = "server_settings: unknown setting; the known ones are the fields of ServerConfig in controlplane/config.py (num_shards, archive_uri, blob_store_uri and archival_allowed_roots have their own variables)."
  }
}

variable "member_tls_server_name" {
  description = "The name every member certificate carries (DNS SAN) and members check each other's certificate against (internal.tls.server_name). One certificate for all members."
  type        = string
  default     = "spindle-member"
}

variable "public_hostname" {
  description = "DNS name clients use for the load balancer; the public TLS certificate must carry it (DNS SAN). The pods' health probe checks the certificate against it."
  type        = string
}

variable "cpu" {
  description = "CPU request (and limit) of each member, e.g. \"1\" or \"500m\" (Autopilot bills requests)."
  type        = string
  default     = "1"
}

variable "memory" {
  description = "Memory request (and limit) of each member, e.g. \"2Gi\"."
  type        = string
  default     = "2Gi"
}

variable "termination_grace_period_seconds" {
  description = "Seconds a stopping member has to hand its shards over and finish calls in flight before it is killed."
  type        = number
  default     = 30
}

# ---------------------------------------------------------------- clients and metrics

variable "load_balancer_internal" {
  description = "true: clients reach the control plane through an internal passthrough Network Load Balancer (VPC only); false: an external one (then set load_balancer_source_ranges)."
  type        = bool
  default     = true
}

variable "load_balancer_source_ranges" {
  description = "CIDR ranges allowed to reach the load balancer (firewall rules GKE creates); empty allows all (within the VPC for an internal load balancer)."
  type        = list(string)
  default     = []
}

variable "enable_managed_prometheus" {
  description = "Create a PodMonitoring (Google Cloud Managed Service for Prometheus) that scrapes every member's /metrics. Needs the monitoring.googleapis.com/v1 CRD (present on Autopilot)."
  type        = bool
  default     = true
}

variable "metrics_scrape_interval" {
  description = "How often Managed Prometheus scrapes /metrics (PodMonitoring interval), e.g. \"30s\"."
  type        = string
  default     = "30s"
}
