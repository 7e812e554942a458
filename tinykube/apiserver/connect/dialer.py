"""Where the apiserver's proxy subresources may connect, and from which network namespace.

Upstream's apiserver dials pod IPs, endpoints and node ports from wherever it runs (the control-plane node, on the
pod network). tinykube's apiserver runs in the root namespace, which has no route to the sandbox and must get none,
so:

- `LoopbackDialer` (the simulated dataplane, and a standalone `tinykube apiserver`): pod IPs are fictitious, so
  nothing but loopback (the node agents' kubelet endpoints) is ever dialled; any other address is refused with a
  503 Status saying why.
- `SandboxDialer` (the netns dataplane): a loopback address is dialled from the root namespace as above; any other
  address from a socket created in the sandbox's LAN namespace (the address the apiserver also listens on there),
  which routes to every node and, through them, to every pod — and to nothing outside the sandbox.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket

from tinykube.api import errors

DIAL_TIMEOUT = 30.0  # upstream's proxy transport dials with Go's 30 s net.Dialer timeout


class DialError(Exception):
    """The connection failed; the text is Go's (`dial tcp 10.244.1.5:80: connect: connection refused`)."""


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _family(host: str) -> int:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _connect(sock: socket.socket, host: str, port: int, timeout: float) -> socket.socket:
    """Connect a non-blocking socket (wherever it was made), with Go's wording for failures."""
    try:
        await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, (host, port)), timeout)
    except TimeoutError:
        sock.close()
        raise DialError(f"dial tcp {_hostport(host, port)}: i/o timeout") from None
    except OSError as err:
        sock.close()
        reason = os.strerror(err.errno).lower() if err.errno else str(err)
        raise DialError(f"dial tcp {_hostport(host, port)}: connect: {reason}") from None
    except BaseException:
        sock.close()
        raise
    return sock


class LoopbackDialer:
    """Loopback only: the simulated dataplane has no pod network to reach."""

    pod_network = False

    async def dial(self, host: str, port: int, timeout: float = DIAL_TIMEOUT) -> socket.socket:
        if not is_loopback(host):
            raise errors.ServiceUnavailable(
                f"the simulated dataplane has no pod network: {_hostport(host, port)} cannot be reached "
                "(run the cluster with `--dataplane netns` to proxy to pods and services)"
            )
        sock = socket.socket(_family(host), socket.SOCK_STREAM)
        sock.setblocking(False)
        return await _connect(sock, host, port, timeout)


class SandboxDialer(LoopbackDialer):
    """Loopback from the root namespace; every other address from inside the sandbox's LAN namespace."""

    pod_network = True

    def __init__(self, netns_name: str) -> None:
        self.netns = netns_name

    async def dial(self, host: str, port: int, timeout: float = DIAL_TIMEOUT) -> socket.socket:
        if is_loopback(host):
            return await super().dial(host, port, timeout)
        from tinykube.sandbox import netns

        try:
            sock = await asyncio.to_thread(
                netns.socket_in, self.netns, _family(host), socket.SOCK_STREAM
            )  # off the loop
        except (OSError, netns.NetnsError) as err:  # the sandbox is not there (yet, or any more)
            raise DialError(f"dial tcp {_hostport(host, port)}: {err}") from None
        return await _connect(sock, host, port, timeout)
