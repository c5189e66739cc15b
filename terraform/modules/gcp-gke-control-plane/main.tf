# Spindle's control plane on GKE Autopilot, next to the storage of the gcp-spanner module:
# the cluster (with the Secret Manager add-on), the Secret Manager secrets the members read
# (TLS certificates and the bootstrap admin key: created empty, filled with `gcloud secrets
# versions add`, so that no secret material passes through Terraform state), and the
# Workload Identity binding of the pods' Kubernetes service account to the control plane's
# service account. The Kubernetes objects are in kubernetes.tf, the server configuration in
# config.tf.

locals {
  cluster_name = coalesce(var.cluster_name, "${var.name}-cp")
  labels       = merge({ "app" = "spindle" }, var.labels)

  # Secret Manager secret -> the file it becomes in the pod (locals.secret_files, config.tf).
  secrets = { for key, file in local.secret_files : key => {
    secret_id = "${var.name}-${replace(key, "_", "-")}"
    file      = file
  } }
}

# ---------------------------------------------------------------- cluster

resource "google_container_cluster" "spindle" {
  project             = var.project_id
  name                = local.cluster_name
  location            = var.region
  enable_autopilot    = true
  deletion_protection = var.cluster_deletion_protection
  network             = var.network
  subnetwork          = var.subnetwork
  resource_labels     = local.labels

  release_channel {
    channel = var.release_channel
  }

  # The Secret Manager add-on: the secrets below are mounted into the pods as files
  # (CSI driver secrets-store-gke.csi.k8s.io, SecretProviderClass provider "gke").
  secret_manager_config {
    enabled = true
  }
}

# ---------------------------------------------------------------- secrets (values added out of band)

resource "google_secret_manager_secret" "spindle" {
  for_each  = local.secrets
  project   = var.project_id
  secret_id = each.value.secret_id
  labels    = local.labels

  replication {
    auto {}
  }
}

# The control plane's service account reads exactly these secrets.
resource "google_secret_manager_secret_iam_member" "spindle" {
  for_each  = local.secrets
  project   = var.project_id
  secret_id = google_secret_manager_secret.spindle[each.key].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${var.service_account_email}"
}

# The Secret Manager add-on fetches the secrets as the pod's identity. Grant its Kubernetes
# service account directly too (Workload Identity Federation principal), so that the mount works
# whichever of the two identities the add-on presents.
data "google_project" "this" {
  project_id = var.project_id
}

resource "google_secret_manager_secret_iam_member" "kubernetes_service_account" {
  for_each  = local.secrets
  project   = var.project_id
  secret_id = google_secret_manager_secret.spindle[each.key].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "principal://iam.googleapis.com/projects/${data.google_project.this.number}/locations/global/workloadIdentityPools/${var.project_id}.svc.id.goog/subject/ns/${var.kubernetes_namespace}/sa/${var.kubernetes_service_account}"

  depends_on = [google_container_cluster.spindle] # the pool PROJECT.svc.id.goog exists with the cluster
}

# ---------------------------------------------------------------- Workload Identity

# The pods' Kubernetes service account may act as the control plane's service account
# (the gcp-spanner module's, which holds the Spanner and bucket grants).
resource "google_service_account_iam_member" "workload_identity" {
  service_account_id = "projects/${var.project_id}/serviceAccounts/${var.service_account_email}"
  role               = "roles/iam.workloadIdentityUser"
  member             = "serviceAccount:${var.project_id}.svc.id.goog[${var.kubernetes_namespace}/${var.kubernetes_service_account}]"

  depends_on = [google_container_cluster.spindle] # the identity pool PROJECT.svc.id.goog exists with the cluster
}
