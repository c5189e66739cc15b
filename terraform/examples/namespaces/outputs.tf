output "namespace_ids" {
  description = "Server-assigned IDs of the three namespaces."
  value = {
    orders    = spindle_namespace.orders.namespace_id
    analytics = spindle_namespace.analytics.namespace_id
    sandbox   = spindle_namespace.sandbox.namespace_id
  }
}

output "all_namespaces" {
  description = "Every namespace on the server, including ones Terraform does not manage (such as default)."
  value       = data.spindle_namespaces.all.names
}
