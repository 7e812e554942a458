"""The API group discovery.k8s.io: EndpointSlices."""
