"""The reset plan (pure): which keys go and which initial values are written back."""

from __future__ import annotations

import pytest

from tinykube.testing.etcdreset import Keys, Plan, plan_reset, touched

NS = b"/registry/namespaces/"
INITIAL: Keys = {NS + b"default": b"d0", b"/registry/minions/node-1": b"n0", b"/registry/leases/x/node-1": b"l0"}


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        pytest.param(INITIAL, Plan([], {}), id="unchanged"),
        pytest.param(
            {**INITIAL, NS + b"t": b"t", b"/registry/pods/t/p": b"p"},
            Plan([NS + b"t", b"/registry/pods/t/p"], {}),
            id="new-keys-deleted",
        ),
        pytest.param({**INITIAL, NS + b"default": b"d1"}, Plan([], {NS + b"default": b"d0"}), id="changed-restored"),
        pytest.param(
            {k: v for k, v in INITIAL.items() if k != NS + b"default"},
            Plan([], {NS + b"default": b"d0"}),
            id="deleted-restored",
        ),
        pytest.param(
            {**INITIAL, b"/registry/minions/node-1": b"n1", b"/registry/leases/x/node-1": b"l1"},
            Plan([], {}),
            id="heartbeats-left-alone",
        ),
        pytest.param({**INITIAL, b"/registry/leases/x/node-2": b"l"}, Plan([], {}), id="new-lease-kept"),
    ],
)
def test_plan_reset(now: Keys, expected: Plan) -> None:
    assert plan_reset(INITIAL, now) == expected


def test_touched_names_the_resources_whose_caches_must_catch_up() -> None:
    plan = Plan([b"/registry/services/specs/t/web", b"/registry/allocations/clusterips/10.96.0.5"], {NS + b"x": b""})
    assert sorted(r.plural for r in touched(plan)) == ["namespaces", "services"]
