"""The autoscaling API group: HorizontalPodAutoscalers (v2 stored, v1 served as a view)."""
