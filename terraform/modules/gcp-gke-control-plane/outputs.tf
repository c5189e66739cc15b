output "cluster_name" {
  description = "Name of the GKE Autopilot cluster (for gcloud container clusters get-credentials)."
  value       = google_container_cluster.spindle.name
}

output "cluster_endpoint" {
  description = "IP address of the cluster's Kubernetes API, for the kubernetes provider's host (https://ENDPOINT)."
  value       = google_container_cluster.spindle.endpoint
}

output "cluster_ca_certificate" {
  description = "Base64 PEM CA certificate of the cluster's Kubernetes API, for the kubernetes provider's cluster_ca_certificate (base64decode it)."
  value       = google_container_cluster.spindle.master_auth[0].cluster_ca_certificate
}

output "secret_ids" {
  description = "Secret Manager secret IDs to fill before the members can start, by content: bootstrap_admin_key, tls_cert, tls_key, tls_ca, member_cert, member_key, member_ca."
  value       = { for key, s in google_secret_manager_secret.spindle : key => s.secret_id }
}

output "client_address" {
  description = "HOST:PORT of the load balancer (an IP; clients should dial public_hostname, which the certificate names, after pointing DNS at this IP)."
  value       = "${kubernetes_service_v1.clients.status[0].load_balancer[0].ingress[0].ip}:${local.ports.public}"
}

output "kubernetes_namespace" {
  description = "Kubernetes namespace of the control plane's objects."
  value       = kubernetes_namespace_v1.spindle.metadata[0].name
}

output "statefulset_name" {
  description = "Name of the members' StatefulSet (kubectl rollout status statefulset/NAME)."
  value       = kubernetes_stateful_set_v1.spindle.metadata[0].name
}

output "server_config_yaml" {
  description = "The server configuration the members run with (__POD_NAME__ is each member's pod name)."
  value       = local.server_config_yaml
}

output "ports" {
  description = "Container ports: public (gRPC and health), internal (members, mutual TLS), metrics (Prometheus /metrics)."
  value       = local.ports
}
