# Spindle on Google Cloud: a Spanner instance and database with Spindle's schema,
# a GCS bucket for archived histories (and large payloads), and a service account
# with access to exactly those two resources.

locals {
  bucket_name        = coalesce(var.bucket_name, "${var.name_prefix}-archive-${var.project_id}")
  service_account_id = coalesce(var.service_account_id, "${var.name_prefix}-server")
  custom_role_id     = "${replace(var.name_prefix, "-", "_")}_spanner_data"
  database_role      = var.spanner_database_role != null ? var.spanner_database_role : google_project_iam_custom_role.spanner_data[0].id
  labels             = merge({ "app" = "spindle" }, var.labels)
}

# ---------------------------------------------------------------- Spanner

resource "google_spanner_instance" "spindle" {
  project          = var.project_id
  name             = "${var.name_prefix}-spanner"
  display_name     = "Spindle (${var.name_prefix})"
  config           = var.spanner_config
  processing_units = var.spanner_processing_units
  edition          = var.spanner_edition
  labels           = local.labels
}

resource "google_spanner_database" "spindle" {
  project                  = var.project_id
  instance                 = google_spanner_instance.spindle.name
  name                     = var.database_name
  database_dialect         = "GOOGLE_STANDARD_SQL"
  version_retention_period = var.version_retention_period
  deletion_protection      = var.deletion_protection
  ddl                      = var.apply_ddl ? local.spindle_ddl : []
}

# ---------------------------------------------------------------- archival bucket

resource "google_storage_bucket" "archive" {
  project                     = var.project_id
  name                        = local.bucket_name
  location                    = var.bucket_location
  storage_class               = "STANDARD"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = var.bucket_force_destroy
  labels                      = local.labels

  dynamic "lifecycle_rule" {
    for_each = var.archive_nearline_after_days > 0 ? [var.archive_nearline_after_days] : []
    content {
      condition {
        age            = lifecycle_rule.value
        matches_prefix = [var.archive_prefix]
      }
      action {
        type          = "SetStorageClass"
        storage_class = "NEARLINE"
      }
    }
  }

  dynamic "lifecycle_rule" {
    for_each = var.archive_delete_after_days > 0 ? [var.archive_delete_after_days] : []
    content {
      condition {
        age            = lifecycle_rule.value
        matches_prefix = [var.archive_prefix]
      }
      action {
        type = "Delete"
      }
    }
  }
}

# ---------------------------------------------------------------- identity (least privilege)

resource "google_service_account" "spindle" {
  project      = var.project_id
  account_id   = local.service_account_id
  display_name = "Spindle control plane (${var.name_prefix})"
  description  = "Runs the Spindle control plane: reads and writes its Spanner database and archival bucket, nothing else."
}

# Data access only: no schema changes (Terraform owns the DDL), no IAM, no backups.
resource "google_project_iam_custom_role" "spanner_data" {
  count       = var.spanner_database_role == null ? 1 : 0
  project     = var.project_id
  role_id     = local.custom_role_id
  title       = "Spindle Spanner data access (${var.name_prefix})"
  description = "Read and write rows of the Spindle database; no DDL or IAM changes."
  permissions = [
    "spanner.databases.beginOrRollbackReadWriteTransaction",
    "spanner.databases.beginPartitionedDmlTransaction",
    "spanner.databases.beginReadOnlyTransaction",
    "spanner.databases.get",
    "spanner.databases.getDdl",
    "spanner.databases.partitionQuery",
    "spanner.databases.partitionRead",
    "spanner.databases.read",
    "spanner.databases.select",
    "spanner.databases.write",
    "spanner.sessions.create",
    "spanner.sessions.delete",
    "spanner.sessions.get",
    "spanner.sessions.list",
  ]
}

# Bound on the database itself, not the instance or the project.
resource "google_spanner_database_iam_member" "spindle" {
  project  = var.project_id
  instance = google_spanner_instance.spindle.name
  database = google_spanner_database.spindle.name
  role     = local.database_role
  member   = "serviceAccount:${google_service_account.spindle.email}"
}

# Objects only (create, read, list, delete: retention deletes large payloads), on this bucket only.
resource "google_storage_bucket_iam_member" "spindle" {
  bucket = google_storage_bucket.archive.name
  role   = "roles/storage.objectUser"
  member = "serviceAccount:${google_service_account.spindle.email}"
}

resource "google_service_account_iam_member" "workload_identity" {
  for_each           = toset(var.workload_identity_members)
  service_account_id = google_service_account.spindle.name
  role               = "roles/iam.workloadIdentityUser"
  member             = each.value
}
