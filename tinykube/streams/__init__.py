"""The streaming subresources (exec, attach, portforward) between a client and a node agent.

A client (kubectl, the Python client) reaches the apiserver, which relays the connection to the node agent that
runs the pod, as upstream's apiserver relays it to the kubelet. The node agent terminates the wire protocols and
hands the runtime protocol-free streams (`remotecommand.CommandStreams`, a dialled TCP connection for a port):

- `channels`: the WebSocket channel protocols `v5.channel.k8s.io` … `channel.k8s.io` (kubectl 1.32's default for
  exec/attach/cp, the Python client's `stream()` and `portforward()`);
- `spdy`: SPDY/3.1 (kubectl's fallback, and what kubectl 1.32's port-forward tunnels inside a WebSocket as the
  `SPDY/3.1+portforward.k8s.io` subprotocol);
- `websocket`: a server-side WebSocket over an asyncio stream pair (the node agent's server is not an ASGI one).
"""
