"""The API group apiextensions.k8s.io: CustomResourceDefinitions."""
