"""The API group autoscaling: HorizontalPodAutoscalers (v2 stored, v1 served as a view)."""
