"""Which requests are long-running (exempt from the in-flight limits), as upstream's filter decides: watches and
the streaming subresources, and a proxy subresource whatever path follows it (its body is the backend's)."""

from __future__ import annotations

import pytest

from tinykube.apiserver.http.limits import _long_running, _proxied


@pytest.mark.parametrize(
    ("path", "query", "long", "proxied"),
    [
        ("/api/v1/namespaces/ns/pods", b"watch=true", True, False),
        ("/api/v1/watch/namespaces/ns/pods", b"", True, False),
        ("/api/v1/namespaces/ns/pods/p/exec", b"command=ls", True, False),
        ("/api/v1/namespaces/ns/pods/p/log", b"", True, False),
        ("/api/v1/namespaces/ns/pods/p/portforward", b"ports=80", True, False),
        ("/api/v1/namespaces/ns/services/s:http/proxy", b"", True, True),
        ("/api/v1/namespaces/ns/services/s:http/proxy/index.html", b"", True, True),
        ("/api/v1/namespaces/ns/pods/p/proxy/a/b/exec", b"", True, True),
        ("/api/v1/nodes/node-1/proxy/metrics/resource", b"", True, True),
        ("/api/v1/namespaces/ns/pods/p", b"", False, False),
        ("/api/v1/namespaces/proxy", b"", False, False),  # a namespace named "proxy"
        ("/api/v1/namespaces/ns/configmaps/proxy", b"", False, False),
        ("/apis/apps/v1/namespaces/ns/deployments/proxy/scale", b"", False, False),
    ],
)
def test_long_running(path: str, query: bytes, long: bool, proxied: bool) -> None:
    scope = {"type": "http", "path": path, "query_string": query}
    assert (_long_running(scope), _proxied(scope)) == (long, proxied)
