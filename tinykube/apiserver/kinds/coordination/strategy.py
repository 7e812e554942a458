"""Strategy (upstream v1 validation) for coordination.k8s.io/v1 Lease, with kube-apiserver 1.32's field paths and
messages (the lease strategy fields gated off, as a default 1.32 has them).
"""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import FieldError, forbidden, invalid, not_supported
from tinykube.api.jsonshape import as_dict, as_int, as_str
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.validation import qualified_name_errors

_LEASE_STRATEGIES = ["OldestEmulationVersion"]
_GATED_LEASE_FIELDS = ("strategy", "preferredHolder")


def _lease_strategy_errors(strategy: str, path: str) -> list[FieldError]:
    field = f"{path}.strategy"  # upstream names the child again under the already-named path: spec.strategy.strategy
    if "/" not in strategy:
        return [] if strategy in _LEASE_STRATEGIES else [not_supported(field, strategy, _LEASE_STRATEGIES)]
    return qualified_name_errors(strategy, field)


def lease_spec_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    duration = as_int(spec.get("leaseDurationSeconds"))
    if duration is not None and duration <= 0:
        errs.append(invalid(f"{path}.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = as_int(spec.get("leaseTransitions"))
    if transitions is not None and transitions < 0:
        errs.append(invalid(f"{path}.leaseTransitions", transitions, "must be greater than or equal to 0"))
    strategy = spec.get("strategy")
    if strategy is not None:
        errs += _lease_strategy_errors(as_str(strategy), f"{path}.strategy")
    if as_str(spec.get("preferredHolder")) and not as_str(strategy):
        errs.append(forbidden(f"{path}.preferredHolder", "may only be specified if `strategy` is defined"))
    return errs


class LeaseStrategy(Strategy):
    """The object leader election renews. `strategy` and `preferredHolder` belong to coordinated leader election,
    an alpha feature that 1.32 ships switched off: they are dropped unless the stored object already had them."""

    allow_create_on_update = True  # leader-election clients create their lease with a PUT
    coordinated_leader_election = False  # the CoordinatedLeaderElection feature gate

    def prepare_create(self, obj: dict[str, Any]) -> None:
        super().prepare_create(obj)
        if not self.coordinated_leader_election:
            for name in _GATED_LEASE_FIELDS:
                as_dict(obj.get("spec")).pop(name, None)

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_update(new, old)
        if not self.coordinated_leader_election:
            old_spec = as_dict(old.get("spec"))
            for name in _GATED_LEASE_FIELDS:
                if old_spec.get(name) is None:
                    as_dict(new.get("spec")).pop(name, None)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return lease_spec_errors(as_dict(obj.get("spec")), "spec")


STRATEGIES: dict[str, type[Strategy]] = {"leases": LeaseStrategy}
