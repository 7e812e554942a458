"""The kubelet's `/metrics/resource` endpoint, the one metrics-server scrapes: each running container's cumulative
CPU time and working set, and the node's, in Prometheus' text format with millisecond timestamps (the metric names,
help texts and labels of the kubelet's resource metrics collector). `parse` reads it back for tinykube's metrics
server, so the format lives in one place.

Where the numbers come from is the runtime's business (`Runtime.usage`): a simulated pod's documented
annotations, or the processes of a netns pod. The node's CPU counter is the sum of what its containers used, kept
monotonic across containers that come and go (`NodeCpu`); its working set is theirs summed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from tinykube.api.quantity import QuantityError, parse_quantity

CPU_USAGE_ANNOTATION = "tinykube.io/cpu-usage"  # a simulated pod's CPU use: "250m", or per container "app=200m,..."
MEMORY_USAGE_ANNOTATION = "tinykube.io/memory-usage"  # and its working set: "64Mi", or per container


@dataclass(frozen=True, slots=True)
class ContainerUsage:
    cpu_seconds: float  # cumulative CPU time since the container (this run of it) started, in core-seconds
    memory_bytes: int  # working set now
    started: float  # when this run started, seconds since the epoch
    at: float  # when it was measured, likewise


@dataclass
class NodeCpu:
    """The node's cumulative CPU seconds: each container's growth since the last scrape, added up."""

    total: float = 0.0
    _seen: dict[tuple[str, str, str, float], float] = field(default_factory=dict)

    def advance(self, pods: dict[tuple[str, str], dict[str, ContainerUsage]]) -> float:
        seen: dict[tuple[str, str, str, float], float] = {}
        for (namespace, pod), containers in pods.items():
            for name, usage in containers.items():
                key = (namespace, pod, name, usage.started)
                self.total += max(usage.cpu_seconds - self._seen.get(key, 0.0), 0.0)
                seen[key] = usage.cpu_seconds
        self._seen = seen
        return self.total


def annotated_usage(annotations: dict[str, str], name: str, containers: list[str]) -> dict[str, float]:
    """A usage annotation per container: a bare quantity is the pod's and goes to its first container;
    `name=quantity,...` gives each named container its own. An unparseable entry counts as nothing."""
    text = annotations.get(name, "").strip()
    if not text or not containers:
        return {}
    pairs = [part.partition("=") for part in text.split(",")] if "=" in text else [(containers[0], "=", text)]
    found: dict[str, float] = {}
    for container, _, value in pairs:
        try:
            found[container.strip()] = float(parse_quantity(value.strip()).value)
        except QuantityError:
            continue
    return found


_CONTAINER_HELP = {
    "container_cpu_usage_seconds_total": ("counter", "Cumulative cpu time consumed by the container in core-seconds"),
    "container_memory_working_set_bytes": ("gauge", "Current working set of the container in bytes"),
    "container_start_time_seconds": ("gauge", "Start time of the container since unix epoch in seconds"),
}
_NODE_HELP = {
    "node_cpu_usage_seconds_total": ("counter", "Cumulative cpu time consumed by the node in core-seconds"),
    "node_memory_working_set_bytes": ("gauge", "Current working set of the node in bytes"),
}


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(
    pods: dict[tuple[str, str], dict[str, ContainerUsage]], node_cpu: float, node_memory: int, stamp: float
) -> bytes:
    """The exposition of `pods` ((namespace, name) -> container -> usage, each stamped when it was measured) and
    the node's totals at `stamp`."""
    ms = round(stamp * 1000)
    lines: list[str] = []
    for metric, (kind, text) in _CONTAINER_HELP.items():
        lines += [f"# HELP {metric} [STABLE] {text}", f"# TYPE {metric} {kind}"]
        for (namespace, pod), containers in sorted(pods.items()):
            for name, usage in sorted(containers.items()):
                value = {
                    "container_cpu_usage_seconds_total": usage.cpu_seconds,
                    "container_memory_working_set_bytes": usage.memory_bytes,
                    "container_start_time_seconds": usage.started,
                }[metric]
                labels = f'container="{_label(name)}",namespace="{_label(namespace)}",pod="{_label(pod)}"'
                lines.append(f"{metric}{{{labels}}} {value!r} {round(usage.at * 1000)}")
    for metric, (kind, text) in _NODE_HELP.items():
        value = node_cpu if metric == "node_cpu_usage_seconds_total" else node_memory
        lines += [f"# HELP {metric} [STABLE] {text}", f"# TYPE {metric} {kind}", f"{metric} {value!r} {ms}"]
    lines += [
        "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
        "# TYPE resource_scrape_error gauge",
        "resource_scrape_error 0",
    ]
    return ("\n".join(lines) + "\n").encode()


@dataclass
class Sample:
    """One scrape, read back: per container (namespace, pod, container) its CPU seconds, working set, start time
    and the sample's time; and the node's CPU seconds and working set with theirs."""

    containers: dict[tuple[str, str, str], dict[str, float]] = field(default_factory=dict)
    node: dict[str, float] = field(default_factory=dict)


_LINE = re.compile(
    r'^(?P<metric>[a-z_]+)(?:\{(?P<labels>(?:[^}"]|"(?:[^"\\]|\\.)*")*)\})? (?P<value>\S+)(?: (?P<ms>-?\d+))?$'
)
_PAIR = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')
_FIELDS = {
    "container_cpu_usage_seconds_total": "cpu",
    "container_memory_working_set_bytes": "memory",
    "container_start_time_seconds": "started",
    "node_cpu_usage_seconds_total": "cpu",
    "node_memory_working_set_bytes": "memory",
}


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], value)


def parse(text: str) -> Sample:
    """The samples of a `/metrics/resource` body; lines it does not know (or cannot read) are skipped."""
    sample = Sample()
    for line in text.split("\n"):  # not splitlines(): a label value may hold \x1e and other separators
        found = _LINE.match(line)
        if found is None or found["metric"] not in _FIELDS:
            continue
        try:
            value = float(found["value"])
        except ValueError:
            continue
        if not math.isfinite(value):
            continue
        name = _FIELDS[found["metric"]]
        stamp = int(found["ms"]) / 1000 if found["ms"] else 0.0
        if found["metric"].startswith("node_"):
            sample.node[name], sample.node[f"{name}_at"] = value, stamp
            continue
        labels = dict(_PAIR.findall(found["labels"] or ""))
        key = (_unescape(labels.get("namespace", "")), _unescape(labels.get("pod", "")),
               _unescape(labels.get("container", "")))  # fmt: skip
        if all(key):
            entry = sample.containers.setdefault(key, {})
            entry[name], entry["at"] = value, stamp
    return sample
