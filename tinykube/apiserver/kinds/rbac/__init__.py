"""The API group rbac.authorization.k8s.io: Roles, ClusterRoles and their bindings."""
