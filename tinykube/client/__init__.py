"""Clients of the apiserver: kubeconfig files and the REST client every component uses."""
