"""The scheduler's index for plain pods (`Scheduler._schedule_quickly`) chooses what its loop over the nodes
chooses: the same node for every pod and the same start for the next pod's search, while pods are bound and go,
nodes fill up, come, change and stop being Ready (the loop then decides, and the index must be current after)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from tinykube.api.noderesources import Footprint
from tinykube.client.informer import SharedInformers
from tinykube.client.rest import RestClient
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.scheduler import Scheduler

Object = dict[str, Any]


class Recording(Scheduler):
    """Binds nothing: records where each pod was placed and reserves its place, as `_place` does."""

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.placed: list[tuple[str, str, int]] = []

    async def _place(self, pod: Object, want: Footprint, node: str, claims: list[Object]) -> None:
        self._reserve(pod, want.key, node)
        self.placed.append((want.key, node, self._next_start))

    async def _failed(self, pod: Object, message: str, *, nominate: str | None = None) -> None:
        self.placed.append((pod["metadata"]["name"], "", self._next_start))


class Walking(Recording):
    """The reference: never the index, always the loop."""

    async def _schedule_quickly(self, pod: Object, want: Footprint, claims: list[Object]) -> bool:
        return False


TAINTS = [  # a node's hard taints: the pods' default tolerations match the first alone
    [],
    [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}],
    [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}],
    [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
]
TOLERATIONS = [  # a pod's
    [],
    [  # what DefaultTolerationSeconds gives every pod
        {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for key in ("not-ready", "unreachable")
    ],
    [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
    [{"operator": "Exists"}],  # everything
]


def node(
    name: str, pods: int, ready: bool = True, version: int = 1, taints: int = 0, unschedulable: bool = False
) -> Object:
    spec: Object = {"taints": TAINTS[taints]} if taints else {}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "metadata": {"name": name, "resourceVersion": str(version)},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": str(pods)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(name: str, tolerations: int = 1) -> Object:
    spec: Object = {"containers": [{"name": "c", "image": "x"}], "tolerations": TOLERATIONS[tolerations]}
    return {"metadata": {"name": name, "namespace": "d"}, "spec": spec}


def scheduler(kind: type[Recording]) -> Recording:
    client = cast(RestClient, object())  # never started: the test feeds the informers' stores itself
    return kind(ControllerContext(client, SharedInformers(client)))


step = st.one_of(
    st.tuples(st.just("pod"), st.integers(1, 4), st.sampled_from([1, 1, 1, 0, 2, 3])),  # that many plain pods to
    # schedule, with these tolerations
    st.tuples(st.just("gone"), st.integers(0, 1000)),  # a bound pod (the n-th, modulo) goes
    st.tuples(st.just("resize"), st.integers(0, 1000), st.integers(0, 6)),  # a node's pod capacity changes
    st.tuples(st.just("ready"), st.integers(0, 1000), st.booleans()),  # a node stops or starts being Ready
    st.tuples(st.just("node"), st.integers(0, 6)),  # a node comes
    st.tuples(st.just("taint"), st.integers(0, 1000), st.integers(0, len(TAINTS) - 1)),  # a node's taints change
    st.tuples(st.just("cordon"), st.integers(0, 1000), st.booleans()),  # a node is (un)cordoned
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=130), st.lists(step, max_size=30))
def test_the_index_places_every_pod_where_the_loop_does(capacities: list[int], steps: list[tuple[Any, ...]]) -> None:
    async def scenario() -> list[list[tuple[str, str, int]]]:
        runs = [scheduler(Recording), scheduler(Walking)]
        for s in runs:
            for i, pods in enumerate(capacities):
                s.nodes.store.put(node(f"n{i:03d}", pods))
        made = 0
        for step_number, (kind, *args) in enumerate(steps):
            version = step_number + 2  # a new resourceVersion for each change: the scheduler caches views by it
            for s in runs:
                names = sorted(s.nodes.store.keys())
                bound = sorted(k for k, _n, _ in s.placed if _n)
                if kind == "pod":
                    for i in range(args[0]):
                        p = pod(f"p{made + i}", args[1])
                        s.pods.store.put(p)
                        await s.schedule(f"d/{p['metadata']['name']}")
                elif kind == "gone" and bound:
                    s.usage.clear(bound[args[0] % len(bound)])
                elif kind in ("resize", "ready", "taint", "cordon"):
                    i = args[0] % len(names)
                    old = s.nodes.store.get(names[i])
                    assert old is not None
                    capacity = args[1] if kind == "resize" else int(old["status"]["allocatable"]["pods"])
                    ready = args[1] if kind == "ready" else old["status"]["conditions"][0]["status"] == "True"
                    taints = args[1] if kind == "taint" else TAINTS.index(old["spec"].get("taints", []))
                    cordoned = args[1] if kind == "cordon" else bool(old["spec"].get("unschedulable"))
                    new = node(names[i], capacity, ready, version, taints, cordoned)
                    s.nodes.store.put(new)
                    s._node_updated(old, new)
                elif kind == "node":
                    new = node(f"n{len(names):03d}x", args[0])
                    s.nodes.store.put(new)
                    s._node_added(new)
            if kind == "pod":
                made += args[0]
        return [s.placed for s in runs]

    quick, walked = asyncio.run(scenario())
    assert quick == walked


def test_nodes_not_ready_leave_the_index_in_use_for_pods_with_the_default_tolerations() -> None:
    """While most of 5,000 nodes come up, a pod does not walk 500 of them: a node not Ready shuts it out as surely
    as a full one. A taint the default tolerations match could let it in: then the loop decides."""

    class Counting(Recording):
        quick = 0

        async def _schedule_quickly(self, pod: Object, want: Footprint, claims: list[Object]) -> bool:
            done = await super()._schedule_quickly(pod, want, claims)
            self.quick += done
            return done

    async def scenario() -> tuple[int, list[str], int]:
        s = scheduler(Counting)
        for i in range(20):
            s.nodes.store.put(node(f"n{i:02d}", 10, ready=i % 4 == 0))
        for i in range(8):
            p = pod(f"p{i}")
            s.pods.store.put(p)
            await s.schedule(f"d/p{i}")
        first = s.quick
        old = s.nodes.store.get("n01")
        assert old is not None
        new = node("n01", 10, True, 2, taints=1)  # Ready, tainted not-ready:NoExecute: a default pod may go there
        s.nodes.store.put(new)
        s._node_updated(old, new)
        p = pod("p8")
        s.pods.store.put(p)
        await s.schedule("d/p8")
        return first, [n for _, n, _ in s.placed], s.quick

    first, placed, after = asyncio.run(scenario())
    assert first == 8
    assert set(placed[:8]) <= {"n00", "n04", "n08", "n12", "n16"}
    assert after == 8  # the ajar node sent p8 through the loop
    assert placed[8] in {"n00", "n04", "n08", "n12", "n16", "n01"}
