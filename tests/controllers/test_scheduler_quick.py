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


def node(name: str, pods: int, ready: bool = True, version: int = 1) -> Object:
    return {
        "metadata": {"name": name, "resourceVersion": str(version)},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": str(pods)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(name: str) -> Object:
    return {"metadata": {"name": name, "namespace": "d"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


def scheduler(kind: type[Recording]) -> Recording:
    client = cast(RestClient, object())  # never started: the test feeds the informers' stores itself
    return kind(ControllerContext(client, SharedInformers(client)))


step = st.one_of(
    st.tuples(st.just("pod"), st.integers(1, 4)),  # that many plain pods to schedule
    st.tuples(st.just("gone"), st.integers(0, 1000)),  # a bound pod (the n-th, modulo) goes
    st.tuples(st.just("resize"), st.integers(0, 1000), st.integers(0, 6)),  # a node's pod capacity changes
    st.tuples(st.just("ready"), st.integers(0, 1000), st.booleans()),  # a node stops or starts being Ready
    st.tuples(st.just("node"), st.integers(0, 6)),  # a node comes
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
                        p = pod(f"p{made + i}")
                        s.pods.store.put(p)
                        await s.schedule(f"d/{p['metadata']['name']}")
                elif kind == "gone" and bound:
                    s.usage.clear(bound[args[0] % len(bound)])
                elif kind in ("resize", "ready"):
                    i = args[0] % len(names)
                    old = s.nodes.store.get(names[i])
                    assert old is not None
                    capacity = args[1] if kind == "resize" else int(old["status"]["allocatable"]["pods"])
                    ready = args[1] if kind == "ready" else old["status"]["conditions"][0]["status"] == "True"
                    new = node(names[i], capacity, ready, version)
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
