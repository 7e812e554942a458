"""What the apiserver sets up for itself at start-up: the cluster CA, serving certificate and service-account key
(`pki`), the system namespaces, Services and default RBAC objects (`systemobjects`), and the `default/kubernetes`
endpoints that say where pods reach the apiserver (`endpointreconciler`).
"""
