"""The generic, HTTP-free registry: one `Registry` that stores every kind through its `Strategy` (defaulting,
validation, allocation), and the machinery all kinds share (the validation helpers, apimachinery's IP and port
rules, Go renderings inside field errors, the `scale` subresource, the CRD-driven strategy of custom resources).
Each built-in kind's own strategy lives in its API group's home, `tinykube/apiserver/kinds/<group>/`;
`kinds/strategies.py` gathers them."""

from __future__ import annotations

from tinykube.apiserver.registry.generic import Registry, Request, Strategy

__all__ = ["Registry", "Request", "Strategy"]
