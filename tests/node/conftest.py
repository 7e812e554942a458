"""Fixtures of the node tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.sandbox.conftest import two_node_sandbox
from tinykube.sandbox.topology import Sandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """A two-node sandbox per test module (root only)."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    with two_node_sandbox() as box:
        yield box
