"""Cluster-wide defaults that several components must agree on, as upstream's flags default them."""

CLUSTER_CIDR = "10.244.0.0/16"  # --cluster-cidr: the pod network, a /24 per node (kubeadm's and flannel's default)
