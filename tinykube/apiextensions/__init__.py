"""CustomResourceDefinitions (`apiextensions.k8s.io/v1`): validation of definitions and of custom resources."""
