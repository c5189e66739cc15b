# Three Spindle namespaces with different retention and search attributes.
#
#   spindle terraform install-provider          # prints the TF_CLI_CONFIG_FILE to export
#   export TF_CLI_CONFIG_FILE=...               # as printed
#   export SPINDLE_ADDRESS=127.0.0.1:7233       # or set var.spindle_address
#   terraform init && terraform apply

terraform {
  required_version = ">= 1.5"

  required_providers {
    spindle = {
      source  = "spindle.local/spindle/spindle"
      version = "~> 0.1"
    }
  }
}

provider "spindle" {
  # null falls back to SPINDLE_ADDRESS, then 127.0.0.1:7233.
  address = var.spindle_address
}

# Customer-facing order workflows: a month of history, searchable by customer.
resource "spindle_namespace" "orders" {
  name           = "orders"
  description    = "Order fulfilment sagas"
  owner_email    = var.owner_email
  retention_days = 30

  search_attributes = {
    CustomerId = "Keyword"
    OrderTotal = "Double"
    Region     = "Keyword"
  }
}

# Nightly reports: kept for a quarter, archived afterwards.
resource "spindle_namespace" "analytics" {
  name           = "analytics"
  description    = "YAML DAG reports"
  owner_email    = var.owner_email
  retention_days = 90
  archival_uri   = var.analytics_archival_uri

  search_attributes = {
    ReportDate = "Datetime"
    Dataset    = "Keyword"
    RowCount   = "Int"
    Tags       = "KeywordList"
  }
}

# Scratch space: one day of history, and destroy may terminate whatever still runs.
resource "spindle_namespace" "sandbox" {
  name           = "sandbox"
  description    = "Experiments; anything here may be terminated"
  retention_days = 1
  force_destroy  = true
}

data "spindle_namespaces" "all" {
  depends_on = [spindle_namespace.orders, spindle_namespace.analytics, spindle_namespace.sandbox]
}
