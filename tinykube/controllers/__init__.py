"""Controllers that run against the apiserver's REST API, as upstream's kube-controller-manager does."""
