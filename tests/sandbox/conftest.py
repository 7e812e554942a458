"""Fixtures of the sandbox tests, and the two-node sandbox the node tests run their pods on."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator

from tinykube.sandbox.topology import Sandbox, node_address


@contextlib.contextmanager
def two_node_sandbox() -> Iterator[Sandbox]:
    """A sandbox of its own (random cluster name) with node-1 and node-2, removed afterwards whatever happens."""
    box = Sandbox(f"t{secrets.token_hex(3)}")
    try:
        box.create()
        box.add_node("node-1", node_address(1), "10.244.1.0/24")
        box.add_node("node-2", node_address(2), "10.244.2.0/24")
        yield box
    finally:
        box.destroy()
