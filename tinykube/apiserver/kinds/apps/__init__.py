"""The apps API group: Deployments, ReplicaSets, StatefulSets, DaemonSets, ControllerRevisions."""
