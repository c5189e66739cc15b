variable "project_id" {
  description = "Google Cloud project that holds every resource of this module."
  type        = string
}

variable "name_prefix" {
  description = "Prefix of resource names (Spanner instance, bucket, service account, custom role). Lowercase letters, digits and '-', starting with a letter."
  type        = string
  default     = "spindle"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,19}$", var.name_prefix))
    error_message = "name_prefix: 1-20 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "labels" {
  description = "Labels added to the Spanner instance and the bucket."
  type        = map(string)
  default     = {}
}

# ---------------------------------------------------------------- Spanner

variable "spanner_config" {
  description = "Spanner instance configuration, e.g. \"regional-us-central1\" or \"nam6\" (multi-region)."
  type        = string
  default     = "regional-us-central1"
}

variable "spanner_processing_units" {
  description = "Compute capacity of the instance in processing units (100, 200, ... 900, then multiples of 1000). 1000 units = 1 node."
  type        = number
  default     = 100

  validation {
    condition = (
      (var.spanner_processing_units >= 100 && var.spanner_processing_units < 1000 && var.spanner_processing_units % 100 == 0)
      || (var.spanner_processing_units >= 1000 && var.spanner_processing_units % 1000 == 0)
    )
    error_message = "spanner_processing_units: 100 to 900 in steps of 100, or a multiple of 1000."
  }
}

variable "spanner_edition" {
  description = "Spanner edition (STANDARD, ENTERPRISE, ENTERPRISE_PLUS), or null for the provider's default."
  type        = string
  default     = null
}

variable "database_name" {
  description = "Name of the Spindle database inside the instance."
  type        = string
  default     = "spindle"

  validation {
    condition     = can(regex("^[a-z][a-z0-9_-]{1,28}[a-z0-9]$", var.database_name))
    error_message = "database_name: 3-30 characters, lowercase letters, digits, '_' or '-', starting with a letter."
  }
}

variable "version_retention_period" {
  description = "How long Spanner keeps old versions of data for point-in-time recovery (1h to 7d)."
  type        = string
  default     = "1h"
}

variable "deletion_protection" {
  description = "Refuse to destroy the Spanner instance's database from Terraform (set false only for throwaway environments)."
  type        = bool
  default     = true
}

variable "apply_ddl" {
  description = "Create Spindle's tables with the database (the module's copy of controlplane/store/schema). Set false to create an empty database and run `spindle admin setup-schema` instead."
  type        = bool
  default     = true
}

# ---------------------------------------------------------------- archival bucket

variable "bucket_location" {
  description = "Location of the archival bucket (a region such as \"us-central1\", or a multi-region such as \"US\"). Keep it close to the Spanner instance."
  type        = string
  default     = "us-central1"
}

variable "bucket_name" {
  description = "Name of the archival bucket; null for \"<name_prefix>-archive-<project_id>\"."
  type        = string
  default     = null
}

variable "archive_prefix" {
  description = "Object prefix of archived histories inside the bucket (the archival_uri output points at it)."
  type        = string
  default     = "archive/"
}

variable "archive_nearline_after_days" {
  description = "Move archived histories to NEARLINE storage this many days after they were written; 0 keeps them in STANDARD."
  type        = number
  default     = 30

  validation {
    condition     = var.archive_nearline_after_days >= 0 && floor(var.archive_nearline_after_days) == var.archive_nearline_after_days
    error_message = "archive_nearline_after_days: a whole number of days, 0 or more."
  }
}

variable "archive_delete_after_days" {
  description = "Delete archived histories this many days after they were written; 0 keeps them forever."
  type        = number
  default     = 365

  validation {
    condition     = var.archive_delete_after_days >= 0 && floor(var.archive_delete_after_days) == var.archive_delete_after_days
    error_message = "archive_delete_after_days: a whole number of days, 0 or more."
  }
}

variable "bucket_force_destroy" {
  description = "Let `terraform destroy` delete the bucket even when it holds objects."
  type        = bool
  default     = false
}

# ---------------------------------------------------------------- identity

variable "service_account_id" {
  description = "Account ID of the control plane's service account; null for \"<name_prefix>-server\"."
  type        = string
  default     = null
}

variable "spanner_database_role" {
  description = "Role granted to the service account on the database. null creates a custom role with only data access (read, write, sessions; no DDL, no IAM). \"roles/spanner.databaseUser\" also allows schema changes."
  type        = string
  default     = null
}

variable "workload_identity_members" {
  description = "Members allowed to act as the service account (roles/iam.workloadIdentityUser), e.g. \"serviceAccount:PROJECT.svc.id.goog[NAMESPACE/KSA]\" for GKE. No keys are created."
  type        = list(string)
  default     = []
}
