"""DefaultPreemption's choices, as pure functions: which pods on a node a pending pod would evict to fit there
(upstream's SelectVictimsOnNode) and which node's victims cost least (pickOneNodeForPreemption).

On a node, every pod of lower priority is taken away; if the pod fits nowhere even then, the node is no candidate.
Otherwise the victims are given back one by one, the most important first (higher priority, then the earlier
started), each kept if the pod still fits with it: what remains evicted is a minimal set, the least important
pods. Of the candidate nodes the one whose most important victim has the lowest priority wins, then the lowest
sum of victims' priorities, then the fewest victims, then the latest started most important victims, then the
first node. PodDisruptionBudgets are not weighed (tinykube's difference: upstream reprieves pods a budget protects
first and prefers nodes with fewer budget violations).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tinykube.api.noderesources import Footprint, NodeTotals

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."
_INT32 = 2**31

Fits = Callable[[NodeTotals], list[str]]  # the reasons the preemptor does not fit beside these totals


@dataclass(frozen=True, slots=True)
class Candidate:
    node: str
    victims: tuple[Footprint, ...]  # most important first


def more_important(footprint: Footprint) -> tuple[int, str]:
    """A sort key putting the more important pod first: higher priority, then the earlier start."""
    return (-footprint.priority, footprint.started or "~")  # no start time sorts after every time


def select_victims(preemptor: Footprint, totals: NodeTotals, fits: Fits) -> tuple[list[Footprint], list[str]]:
    """The fewest, least important pods to evict from a node so that `preemptor` fits; or no victims and why not
    (the filters' reasons with every lower-priority pod gone, or that there is none to evict)."""
    lower = [f for f in totals.pods.values() if f.priority < preemptor.priority]
    if not lower:
        return [], [NO_VICTIMS]
    trial = totals.copy()
    for footprint in lower:
        trial.remove(footprint)
    reasons = fits(trial)
    if reasons:
        return [], reasons
    victims = []
    for footprint in sorted(lower, key=more_important):
        trial.add(footprint)
        if fits(trial):
            trial.remove(footprint)
            victims.append(footprint)
    return victims, []


def _cost(candidate: Candidate) -> tuple[int, int, int, str]:
    victims = candidate.victims
    top = victims[0].priority
    earliest_top = min((v.started for v in victims if v.priority == top), default="")
    return (
        top,
        sum(v.priority + _INT32 for v in victims),
        len(victims),
        _inverted(earliest_top),
    )


def _inverted(stamp: str) -> str:
    """A key under which later RFC 3339 times sort first (upstream prefers the node whose victims started last)."""
    return "".join(chr(0x10FFFF - ord(c)) for c in stamp)


def pick_candidate(candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate whose eviction costs least; ties go to the first (nodes come in name order)."""
    return min(candidates, key=_cost, default=None)
