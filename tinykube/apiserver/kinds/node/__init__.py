"""The API group node.k8s.io: RuntimeClasses."""
