"""The core group ("", v1): namespaces, pods, services, nodes, volumes, config and the rest of v1."""
