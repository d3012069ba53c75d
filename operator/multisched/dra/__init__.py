"""Dynamic Resource Allocation: CEL device selectors (k8s.io/dynamic-resource-allocation)."""
