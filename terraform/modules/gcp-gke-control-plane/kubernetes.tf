# The control plane's Kubernetes objects (hashicorp/kubernetes provider, configured by the
# caller from this module's cluster outputs; see README.md).
#
# Members run as a StatefulSet behind a headless Service: each member has a stable DNS name
# (NAME-0.NAME-members.NAMESPACE.svc.cluster.local) that it advertises to the others, and the
# StatefulSet's rolling update replaces one member at a time, waiting until the new one is
# Ready (grpc.health.v1 SERVING: it owns shards and its store answers) before the next. With
# the PodDisruptionBudget (one member down at most) a node upgrade cannot take several at once.

locals {
  selector = { "app.kubernetes.io/name" = "spindle", "app.kubernetes.io/instance" = var.name }
  k8s_labels = merge(local.selector, {
    "app.kubernetes.io/component"  = "control-plane"
    "app.kubernetes.io/managed-by" = "terraform"
  })
  secret_provider_class = "${var.name}-secrets"
}

resource "kubernetes_namespace_v1" "spindle" {
  metadata {
    name   = var.kubernetes_namespace
    labels = local.k8s_labels
  }
}

# Workload Identity: the pods act as the control plane's Google service account.
resource "kubernetes_service_account_v1" "spindle" {
  metadata {
    name      = var.kubernetes_service_account
    namespace = kubernetes_namespace_v1.spindle.metadata[0].name
    labels    = local.k8s_labels
    annotations = {
      "iam.gke.io/gcp-service-account" = var.service_account_email
    }
  }
}

resource "kubernetes_config_map_v1" "server_config" {
  metadata {
    name      = "${var.name}-config"
    namespace = kubernetes_namespace_v1.spindle.metadata[0].name
    labels    = local.k8s_labels
  }
  data = {
    "config.yaml" = local.server_config_yaml
  }
}

# The Secret Manager add-on mounts these secrets (latest versions) as files in the pods.
resource "kubernetes_manifest" "secret_provider_class" {
  manifest = {
    apiVersion = "secrets-store.csi.x-k8s.io/v1"
    kind       = "SecretProviderClass"
    metadata = {
      name      = local.secret_provider_class
      namespace = kubernetes_namespace_v1.spindle.metadata[0].name
      labels    = local.k8s_labels
    }
    spec = {
      provider = "gke"
      parameters = {
        secrets = yamlencode([for key, s in local.secrets : {
          resourceName = "projects/${var.project_id}/secrets/${s.secret_id}/versions/latest"
          path         = s.file
        }])
      }
    }
  }

  depends_on = [
    google_container_cluster.spindle,
    google_secret_manager_secret_iam_member.spindle,
    google_secret_manager_secret_iam_member.kubernetes_service_account,
  ]
}

# Member-to-member addressing: stable per-pod DNS names, published before the pods are Ready
# (a starting member is dialled by the others as soon as it holds a lease).
resource "kubernetes_service_v1" "members" {
  metadata {
    name      = local.members_service
    namespace = kubernetes_namespace_v1.spindle.metadata[0].name
    labels    = local.k8s_labels
  }
  spec {
    cluster_ip                  = "None"
    publish_not_ready_addresses = true
    selector                    = local.selector
    port {
      name        = "internal"
      port        = local.ports.internal
      target_port = "internal"
      protocol    = "TCP"
    }
    port {
      name        = "grpc"
      port        = local.ports.public
      target_port = "grpc"
      protocol    = "TCP"
    }
  }
}

# Clients: a passthrough Network Load Balancer (L4), TLS end to end (terminated by the members,
# so client certificates reach them). Its health check follows the pods' readiness, which is
# grpc.health.v1: with externalTrafficPolicy Local a node only receives traffic while it holds
# a Ready (SERVING) member.
resource "kubernetes_service_v1" "clients" {
  metadata {
    name      = var.name
    namespace = kubernetes_namespace_v1.spindle.metadata[0].name
    labels    = local.k8s_labels
    annotations = var.load_balancer_internal ? {
      "networking.gke.io/load-balancer-type" = "Internal"
    } : {}
  }
  spec {
    type                        = "LoadBalancer"
    external_traffic_policy     = "Local"
    load_balancer_source_ranges = var.load_balancer_source_ranges
    selector                    = local.selector
    port {
      name        = "grpc"
      port        = local.ports.public
      target_port = "grpc"
      protocol    = "TCP"
    }
  }
}

# In-cluster scraping (Prometheus, Grafana agents): every member's /metrics.
resource "kubernetes_service_v1" "metrics" {
  metadata {
    name      = "${var.name}-metrics"
    namespace = kubernetes_namespace_v1.spindle.metadata[0].name
    labels    = local.k8s_labels
  }
  spec {
    cluster_ip = "None"
    selector   = local.selector
    port {
      name        = "metrics"
      port        = local.ports.metrics
      target_port = "metrics"
      protocol    = "TCP"
    }
  }
}

resource "kubernetes_stateful_set_v1" "spindle" {
  metadata {
    name      = var.name
    namespace = kubernetes_namespace_v1.spindle.metadata[0].name
    labels    = local.k8s_labels
  }

  spec {
    replicas     = var.replicas
    service_name = kubernetes_service_v1.members.metadata[0].name
    # Start and scale members in parallel; updates still go one member at a time.
    pod_management_policy = "Parallel"

    selector {
      match_labels = local.selector
    }

    update_strategy {
      type = "RollingUpdate"
      rolling_update {
        partition = 0
      }
    }

    template {
      metadata {
        labels = local.k8s_labels
        annotations = {
          # a configuration change rolls the members
          "spindle.dev/config-sha256" = sha256(local.server_config_yaml)
        }
      }

      spec {
        service_account_name             = kubernetes_service_account_v1.spindle.metadata[0].name
        termination_grace_period_seconds = var.termination_grace_period_seconds

        security_context {
          run_as_non_root = true
          run_as_user     = 10001
          run_as_group    = 10001
          fs_group        = 10001
          seccomp_profile {
            type = "RuntimeDefault"
          }
        }

        # Spread members over zones: losing a zone leaves the others owning the shards.
        topology_spread_constraint {
          max_skew           = 1
          topology_key       = "topology.kubernetes.io/zone"
          when_unsatisfiable = "ScheduleAnyway"
          label_selector {
            match_labels = local.selector
          }
        }

        # Writes this member's config.yaml: the ConfigMap with __POD_NAME__ replaced.
        init_container {
          name    = "render-config"
          image   = var.image
          command = local.render_config_command
          env {
            name = "POD_NAME"
            value_from {
              field_ref {
                field_path = "metadata.name"
              }
            }
          }
          volume_mount {
            name       = "config-template"
            mount_path = local.config_template_dir
            read_only  = true
          }
          volume_mount {
            name       = "config"
            mount_path = local.config_dir
          }
          resources {
            requests = { cpu = "250m", memory = "256Mi" }
            limits   = { cpu = "250m", memory = "256Mi" }
          }
          security_context {
            allow_privilege_escalation = false
            read_only_root_filesystem  = true
            capabilities {
              drop = ["ALL"]
            }
          }
        }

        container {
          name  = "spindle"
          image = var.image
          args  = local.server_args

          port {
            name           = "grpc"
            container_port = local.ports.public
            protocol       = "TCP"
          }
          port {
            name           = "internal"
            container_port = local.ports.internal
            protocol       = "TCP"
          }
          port {
            name           = "metrics"
            container_port = local.ports.metrics
            protocol       = "TCP"
          }

          dynamic "env" {
            for_each = local.healthcheck_env
            content {
              name  = env.key
              value = env.value
            }
          }

          # Ready = grpc.health.v1 SERVING (owns shards, store answers): what the load
          # balancer and the rolling update wait for. Kubernetes' own gRPC probe cannot speak
          # TLS, hence the image's spindle-healthcheck.
          readiness_probe {
            exec {
              command = ["spindle-healthcheck"]
            }
            period_seconds    = 10
            timeout_seconds   = 5
            failure_threshold = 2
          }
          # Alive = the public port accepts connections (a member that owns no shard is alive).
          liveness_probe {
            tcp_socket {
              port = "grpc"
            }
            period_seconds    = 20
            timeout_seconds   = 5
            failure_threshold = 3
          }
          startup_probe {
            tcp_socket {
              port = "grpc"
            }
            period_seconds    = 5
            failure_threshold = 60
          }

          resources {
            requests = { cpu = var.cpu, memory = var.memory }
            limits   = { cpu = var.cpu, memory = var.memory }
          }

          security_context {
            allow_privilege_escalation = false
            read_only_root_filesystem  = true
            capabilities {
              drop = ["ALL"]
            }
          }

          volume_mount {
            name       = "config"
            mount_path = local.config_dir
            read_only  = true
          }
          volume_mount {
            name       = "secrets"
            mount_path = local.secrets_dir
            read_only  = true
          }
          volume_mount {
            name       = "tmp"
            mount_path = "/tmp"
          }
        }

        volume {
          name = "config-template"
          config_map {
            name = kubernetes_config_map_v1.server_config.metadata[0].name
          }
        }
        volume {
          name = "config"
          empty_dir {
            medium = "Memory"
          }
        }
        volume {
          name = "tmp"
          empty_dir {}
        }
        volume {
          name = "secrets"
          csi {
            driver    = "secrets-store-gke.csi.k8s.io"
            read_only = true
            volume_attributes = {
              secretProviderClass = local.secret_provider_class
            }
          }
        }
      }
    }
  }

  wait_for_rollout = true

  lifecycle {
    # A member is Ready only while it owns a shard (shards are balanced over the members):
    # with more members than shards some would never be Ready and a rollout would stall.
    precondition {
      condition     = var.replicas <= var.num_shards
      error_message = "replicas must be at most num_shards: a member that owns no shard never becomes Ready."
    }
  }

  depends_on = [google_service_account_iam_member.workload_identity, kubernetes_manifest.secret_provider_class]
}

# Voluntary disruptions (Autopilot node upgrades, drains) take one member at a time.
resource "kubernetes_pod_disruption_budget_v1" "spindle" {
  metadata {
    name      = var.name
    namespace = kubernetes_namespace_v1.spindle.metadata[0].name
    labels    = local.k8s_labels
  }
  spec {
    max_unavailable = "1"
    selector {
      match_labels = local.selector
    }
  }
}

# Google Cloud Managed Service for Prometheus scrapes every member's /metrics.
resource "kubernetes_manifest" "pod_monitoring" {
  count = var.enable_managed_prometheus ? 1 : 0
  manifest = {
    apiVersion = "monitoring.googleapis.com/v1"
    kind       = "PodMonitoring"
    metadata = {
      name      = var.name
      namespace = kubernetes_namespace_v1.spindle.metadata[0].name
      labels    = local.k8s_labels
    }
    spec = {
      selector = { matchLabels = local.selector }
      endpoints = [{
        port     = "metrics"
        path     = "/metrics"
        interval = var.metrics_scrape_interval
      }]
    }
  }
}
