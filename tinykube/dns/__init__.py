"""Cluster DNS (CoreDNS-like): records for Services and endpoints from the API. Built in the DNS issue."""
