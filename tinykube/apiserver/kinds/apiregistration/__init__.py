"""The API group apiregistration.k8s.io: APIServices."""
