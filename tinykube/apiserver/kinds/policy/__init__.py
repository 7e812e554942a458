"""The policy API group: PodDisruptionBudgets."""
