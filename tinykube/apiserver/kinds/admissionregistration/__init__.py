"""The API group admissionregistration.k8s.io: webhook configurations and admission policies."""
