"""The API group coordination.k8s.io: Leases."""
