"""The Kubernetes-compatible REST apiserver: routing, registry strategies, watch cache, discovery, printing."""
