"""These tests use only the plugin's fixtures, as a user's project would. tests/conftest.py has a `namespace`
fixture of its own (on its own cluster) for the rest of the suite; importing the plugin's here makes it win for
this directory."""

from __future__ import annotations

from tinykube.testing.plugin import namespace

__all__ = ["namespace"]
