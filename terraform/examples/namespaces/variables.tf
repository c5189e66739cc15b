variable "spindle_address" {
  description = "Spindle frontend, HOST:PORT. null: SPINDLE_ADDRESS, then 127.0.0.1:7233."
  type        = string
  default     = null
}

variable "owner_email" {
  description = "Owner of the orders and analytics namespaces."
  type        = string
  default     = "platform-team@example.com"
}

variable "analytics_archival_uri" {
  description = "Where analytics histories are archived after retention (gs://BUCKET/PREFIX or file:///PATH); null disables archival. The gcp-spanner module's archival_uri output fits here."
  type        = string
  default     = null
}
