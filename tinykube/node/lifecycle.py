"""Container lifecycle hooks (`lifecycle.preStop`, `lifecycle.postStart`), run as the kubelet runs them: an `exec`
command in the container with its environment, an `httpGet` to the pod from its node, or a `sleep`. They share the
probes' handlers (tinykube/node/probes.py); a hook has no timeout of its own, only the caller's (a preStop hook's is
the pod's grace period)."""

from __future__ import annotations

import asyncio
from typing import Any

from tinykube.node.probes import Outcome, Target, exec_probe, http_get

Object = dict[str, Any]


async def run_hook(hook: Object, target: Target) -> Outcome:
    """Run one LifecycleHandler; a failure is an Outcome with upstream's wording of why."""
    try:
        if "exec" in hook:
            found = await exec_probe(hook["exec"], target)
            return found if found.ok else Outcome(False, f"command {_argv(hook['exec'])} exited: {found.message}")
        if "httpGet" in hook:
            found = await http_get(hook["httpGet"], target)
            path = hook["httpGet"].get("path", "/")
            return found if found.ok else Outcome(False, f"HTTP lifecycle hook ({path}) failed: {found.message}")
        if "sleep" in hook:
            await asyncio.sleep(max(float((hook["sleep"] or {}).get("seconds", 0)), 0.0))
            return Outcome(True)
    except (OSError, ValueError) as err:
        return Outcome(False, str(err))
    return Outcome(False, "a lifecycle handler needs exec, httpGet or sleep")


def _argv(handler: Object) -> str:
    return "'" + " ".join(str(a) for a in handler.get("command") or []) + "'"
