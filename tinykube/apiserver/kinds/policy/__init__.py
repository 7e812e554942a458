"""The API group policy: PodDisruptionBudgets."""
