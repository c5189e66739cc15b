output "spanner_instance" {
  description = "Spanner instance name (the ID inside the project)."
  value       = google_spanner_instance.spindle.name
}

output "spanner_database" {
  description = "Spanner database name."
  value       = google_spanner_database.spindle.name
}

output "spanner_database_path" {
  description = "Full database path, projects/P/instances/I/databases/D, for Spindle's server configuration."
  value       = "projects/${var.project_id}/instances/${google_spanner_instance.spindle.name}/databases/${google_spanner_database.spindle.name}"
}

output "archival_bucket" {
  description = "Name of the GCS bucket for archived histories and large payloads."
  value       = google_storage_bucket.archive.name
}

output "archival_uri" {
  description = "Archival URI to give namespaces (spindle_namespace.archival_uri): gs://BUCKET/PREFIX."
  value       = "gs://${google_storage_bucket.archive.name}/${trimsuffix(var.archive_prefix, "/")}"
}

output "service_account_email" {
  description = "Email of the control plane's service account (run the server as this identity)."
  value       = google_service_account.spindle.email
}

output "spanner_database_role" {
  description = "Role the service account holds on the database."
  value       = local.database_role
}

output "ddl" {
  description = "The DDL statements the database was created with (empty when apply_ddl = false)."
  value       = google_spanner_database.spindle.ddl
}
