"""pytest plugin and `Cluster` helper for integration tests. Built in the workflows issue."""
