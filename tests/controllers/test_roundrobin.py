"""The scheduler's round-robin index answers exactly as the walk over the nodes it stands for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tinykube.controllers.roundrobin import NONE, Pick, RoundRobinIndex


def walk(slots: list[tuple[bool, int]], start: int, enough: int) -> Pick:
    """The scheduler's loop: from `start`, wrapping around, until `enough` fit; the fewest load, lowest index."""
    n, fit, checked = len(slots), [], 0
    for i in [*range(start, n), *range(start)]:
        checked += 1
        if slots[i][0]:
            fit.append(i)
            if len(fit) >= enough:
                break
    chosen = min(fit, key=lambda i: (slots[i][1], i)) if fit else NONE
    return Pick(chosen, checked)


slot = st.tuples(st.booleans(), st.integers(0, 120))


@settings(max_examples=400)
@given(st.lists(slot, min_size=1, max_size=70), st.data())
def test_pick_is_the_walk(slots: list[tuple[bool, int]], data: st.DataObject) -> None:
    n = len(slots)
    index = RoundRobinIndex(n)
    for i, (fits, load) in enumerate(slots):
        index.set(i, fits, load)
    for _ in range(5):  # changes in place, as pods are bound and nodes fill up
        start = data.draw(st.integers(0, n - 1))
        enough = data.draw(st.integers(1, n))
        assert index.pick(start, enough) == walk(slots, start, enough)
        assert index.fitting() == sum(fits for fits, _ in slots)
        i = data.draw(st.integers(0, n - 1))
        slots[i] = data.draw(slot)
        index.set(i, *slots[i])


def test_nothing_fits() -> None:
    index = RoundRobinIndex(3)
    for i in range(3):
        index.set(i, False, 0)
    assert index.pick(1, 2) == Pick(NONE, 3)
