"""The API group scheduling.k8s.io: PriorityClasses."""
