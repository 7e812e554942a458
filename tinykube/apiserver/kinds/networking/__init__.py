"""The API group networking.k8s.io: Ingresses, IngressClasses, NetworkPolicies."""
