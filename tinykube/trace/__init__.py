"""`tinykube trace`: one real connection from a pod, a node or the external client, with the kernel's own tracing
(`meta nftrace set 1` + `nft monitor trace`) switched on for that flow only in the namespaces it crosses.

The API (for the CLI and the web page):

    result = await trace(client, "demo", "default/busybox", "web:80")   # -> TraceResult (tinykube.trace.model)
    print(render(result, explain=True))

Modules, one job each: `resolve` (FROM and TO, the name through the cluster DNS as the source resolves it),
`kernel` (arming and disarming the trace tables and the monitors), `nftrace` (parsing `nft monitor trace` lines),
`probe` (the one connection from the source's namespace), `engine` (putting them together), `render` (text).
"""

from __future__ import annotations

from tinykube.trace.engine import trace
from tinykube.trace.model import Dnat, Endpoint, Resolution, Snat, Step, TraceError, TraceResult
from tinykube.trace.render import render

__all__ = ["Dnat", "Endpoint", "Resolution", "Snat", "Step", "TraceError", "TraceResult", "render", "trace"]
