"""The API group apps: Deployments, ReplicaSets, StatefulSets, DaemonSets, ControllerRevisions."""
