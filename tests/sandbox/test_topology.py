"""The netns sandbox: real namespaces (root only). Traffic stays between namespaces the tests create."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.conftest import two_node_sandbox
from tinykube.sandbox import netns
from tinykube.sandbox.topology import (
    EXTERNAL_IP,
    NodeNet,
    Sandbox,
    SandboxError,
    attach_pod,
    detach_pod,
    node_address,
    remove_sandbox,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

RESOLV = "nameserver 10.96.0.10\nsearch d.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"


def cluster_name() -> str:
    return f"t{secrets.token_hex(3)}"


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with two_node_sandbox() as box:
        yield box


def routes(node: NodeNet) -> str:
    return netns.ip("route", "show", netns=node.netns)


def connects(src_netns: str, dst_netns: str, ip: str, port: int = 7000) -> bool:
    """A TCP connection from a socket in `src_netns` to a listener bound to `ip` in `dst_netns`."""
    listener = netns.run_in(dst_netns, lambda: socket.create_server((ip, port)))
    client = netns.socket_in(src_netns)
    client.setblocking(True)
    client.settimeout(2)
    try:
        client.connect((ip, port))
        return True
    except OSError:
        return False
    finally:
        client.close()
        listener.close()


def test_topology(sandbox: Sandbox) -> None:
    one, two = sandbox.nodes["node-1"], sandbox.nodes["node-2"]
    assert (one.netns, one.ip, two.ip) == (f"tk-{sandbox.cluster}.node-1", "172.20.0.2", "172.20.0.3")
    names = [sandbox.lan, sandbox.external, one.netns, two.netns]
    assert netns.list_netns(sandbox.prefix) == sorted(names)
    assert "10.244.2.0/24 via 172.20.0.3 dev eth0" in routes(one)
    assert "10.244.1.0/24 via 172.20.0.2 dev eth0" in routes(two)
    assert "10.96.0.0/16 dev lo scope link src 172.20.0.2" in routes(one)
    assert netns.run_in(one.netns, Path("/proc/sys/net/ipv4/ip_forward").read_text).strip() == "1"


def test_lan_connects_nodes_and_external_client(sandbox: Sandbox) -> None:
    one, two = sandbox.nodes["node-1"], sandbox.nodes["node-2"]
    assert connects(one.netns, two.netns, two.ip)
    assert connects(sandbox.external, one.netns, one.ip)
    assert connects(two.netns, sandbox.external, EXTERNAL_IP)


def test_pods_route_across_nodes(sandbox: Sandbox) -> None:
    one, two = sandbox.nodes["node-1"], sandbox.nodes["node-2"]
    a, b = one.pod("d/a", "10.244.1.5"), two.pod("d/b", "10.244.2.5")
    try:
        attach_pod(one, a, RESOLV, "")
        attach_pod(two, b, RESOLV, "")
        assert connects(a.netns, b.netns, b.ip)
        assert connects(b.netns, a.netns, a.ip)
        assert connects(one.netns, a.netns, a.ip)  # node → its own pod
        assert connects(a.netns, two.netns, two.ip)  # pod → another node
        assert f"{a.ip} dev {a.veth} scope link" in routes(one)
        assert "default via 169.254.1.1 dev eth0" in netns.ip("route", "show", netns=a.netns)
        resolv = netns.ip("netns", "exec", a.netns, "cat", "/etc/resolv.conf")
        assert (
            resolv
            == "nameserver 10.96.0.10\nsearch d.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"
        )
    finally:
        detach_pod(one, a)
        detach_pod(two, b)
    assert not netns.exists(a.netns) and not (netns.NETNS_ETC / a.netns).exists()
    assert a.veth not in netns.ip("link", "show", netns=one.netns)
    assert a.ip not in routes(one)


def test_names_are_checked_and_taken_once(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxError, match="already has namespaces"):
        Sandbox(sandbox.cluster).create()
    with pytest.raises(SandboxError, match="reserved or in use"):
        sandbox.add_node("node-1", node_address(3), "10.244.3.0/24")
    with pytest.raises(SandboxError, match="reserved or in use"):
        sandbox.add_node("lan", node_address(3), "10.244.3.0/24")
    with pytest.raises(SandboxError, match="lowercase"):
        Sandbox("a.b")


CREATOR = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from tinykube.sandbox import netns
    from tinykube.sandbox.topology import Sandbox, attach_pod, node_address
    box = Sandbox(sys.argv[1])
    box.create()
    node = box.add_node("node-1", node_address(1), "10.244.1.0/24")
    pod = node.pod("d/p", "10.244.1.7")
    attach_pod(node, pod, "nameserver 10.96.0.10\\n", "")
    child = subprocess.Popen(netns.exec_argv(pod.netns, ["sleep", "600"]), start_new_session=True)
    print(child.pid, flush=True)
    time.sleep(600)
    """
)


def test_remove_sandbox_whose_creator_died() -> None:
    cluster, neighbour = cluster_name(), Sandbox(cluster_name() + "-2")
    creator = subprocess.Popen([sys.executable, "-c", CREATOR, cluster], stdout=subprocess.PIPE, text=True)
    try:
        neighbour.create()  # a cluster whose name starts with ours: not ours to remove
        assert creator.stdout is not None
        sleeper = int(creator.stdout.readline())
        creator.send_signal(signal.SIGKILL)
        creator.wait()
        removed = remove_sandbox(cluster)
        prefix = f"tk-{cluster}."
        assert removed == [f"{prefix}node-1.{pod_hash('d/p')}", f"{prefix}ext", f"{prefix}lan", f"{prefix}node-1"]
        assert netns.list_netns(prefix) == []
        assert _gone_in_time(sleeper)
        assert netns.list_netns(neighbour.prefix) == sorted([neighbour.lan, neighbour.external])
        assert remove_sandbox(cluster) == []
    finally:
        creator.kill()
        creator.wait()
        remove_sandbox(cluster)
        neighbour.destroy()


def _gone_in_time(pid: int) -> bool:
    """SIGKILL is delivered, and the orphan reaped, asynchronously: the process may still be exiting when
    remove_sandbox returns (seen under load), so give it a moment to be gone or a zombie."""
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and not _zombie(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def pod_hash(key: str) -> str:
    return NodeNet("c", "n", "x", "", "").pod(key, "").netns.removeprefix("x.")


def _zombie(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1].startswith("Z")
