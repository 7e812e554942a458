"""Leader election through a Lease, as client-go's `tools/leaderelection` does it: of several processes running the
same components against one cluster, only the holder of the Lease acts.

    candidate ── every retry period (jittered) ──▶ GET the Lease
        held by another and changed within its leaseDurationSeconds? ──▶ wait for the next retry
        otherwise (missing, released, expired or ours) ──▶ write it with us as holder ──▶ leader
    leader ── every retry period ──▶ update the Lease it last wrote (one write; a GET only after a conflict)
        no renewal succeeded within the renew deadline ──▶ stop the work: leadership is lost

Every write carries the resourceVersion last read, so of two candidates only one wins. Expiry is judged on this
process's own clock, from when it saw the Lease's spec last *change*, so the machines' clocks need not agree. The
renew deadline is shorter than the lease duration: a leader that cannot renew stops acting before anyone else may
start. A leader that stops cleanly releases the Lease (client-go's ReleaseOnCancel: holder emptied, duration 1 s)
so that a candidate takes over at its next retry instead of after a whole lease duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import micro_now
from tinykube.api.resources import builtin
from tinykube.client.events import record_event
from tinykube.client.rest import RestClient, TransportError

log = logging.getLogger(__name__)

Object = dict[str, Any]
LEASES = builtin("coordination.k8s.io", "v1", "leases")
JITTER = 1.2  # client-go's JitterFactor: a candidate retries after 1 to 2.2 retry periods


class LeadershipLost(Exception):
    """No renewal succeeded within the renew deadline (the work was stopped before this is raised)."""


@dataclass(frozen=True, slots=True)
class ElectionConfig:
    """kube-controller-manager's `--leader-elect-*` flags (its defaults), and who campaigns."""

    identity: str = ""  # unique per process: `<hostname>_<uuid>`
    namespace: str = "kube-system"
    name: str = "kube-controller-manager"
    lease_duration: float = 15.0  # seconds
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    component: str = "kube-controller-manager"  # the source of the LeaderElection events

    def check(self) -> None:
        """client-go's NewLeaderElector checks of the timings (its messages); ValueError."""
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if self.renew_deadline <= JITTER * self.retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if self.lease_duration < 1:  # the Lease counts whole seconds, and 0 is invalid
            raise ValueError("leaseDuration must be at least 1s")
        if self.retry_period <= 0:
            raise ValueError("retryPeriod must be greater than zero")


class LeaderElector:
    def __init__(
        self, client: RestClient, config: ElectionConfig, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        config.check()
        if not config.identity:
            raise ValueError("Lock identity is empty")
        self.client = client
        self.config = config
        self.clock = clock
        self._lease: Object | None = None  # as last read or written: the base (resourceVersion) of the next write
        self._observed: Object = {}  # the Lease's spec as last seen changing ...
        self._observed_at = 0.0  # ... and when, on `clock`

    @property
    def description(self) -> str:
        return f"{self.config.namespace}/{self.config.name}"

    @property
    def leader(self) -> str:
        """The holder last observed ("" if none)."""
        return str(self._observed.get("holderIdentity") or "")

    @property
    def is_leader(self) -> bool:
        return self.leader == self.config.identity

    def _lease_valid(self) -> bool:
        duration = int(self._observed.get("leaseDurationSeconds") or 0)
        return self.clock() < self._observed_at + duration

    def _observe(self, lease: Object) -> None:
        self._lease = lease
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observed, self._observed_at = spec, self.clock()

    # One attempt

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to become or stay the holder; True if we hold the Lease now."""
        stamp = micro_now()
        spec: Object = {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": int(self.config.lease_duration),
            "acquireTime": stamp,
            "renewTime": stamp,
            "leaseTransitions": 0,
        }
        if self.is_leader and self._lease_valid() and await self._write({**spec, **self._kept()}):
            return True  # the fast path: the Lease we last wrote is still the current one
        try:
            lease = await self.client.get(LEASES, self.config.namespace, self.config.name)
        except errors.NotFound:
            return await self._create(spec)
        except (errors.ApiError, TransportError) as err:
            log.warning("error retrieving resource lock %s: %s", self.description, err)
            return False
        self._observe(lease)
        if self.leader and self._lease_valid() and not self.is_leader:
            log.debug("lock is held by %s and has not yet expired", self.leader)
            return False
        if self.is_leader:
            spec.update(self._kept())
        else:
            spec["leaseTransitions"] = int(self._observed.get("leaseTransitions") or 0) + 1
        return await self._write(spec)

    def _kept(self) -> Object:
        """What a renewal keeps of the term: when it began, and how many terms came before."""
        kept = {"leaseTransitions": int(self._observed.get("leaseTransitions") or 0)}
        return {**kept, "acquireTime": self._observed["acquireTime"]} if self._observed.get("acquireTime") else kept

    async def _create(self, spec: Object) -> bool:
        lease = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self.config.name, "namespace": self.config.namespace},
            "spec": spec,
        }
        try:
            created = await self.client.create(LEASES, self.config.namespace, lease)
        except (errors.ApiError, TransportError) as err:
            log.warning("error initially creating leader election record %s: %s", self.description, err)
            return False
        self._observe(created)
        return True

    async def _write(self, spec: Object) -> bool:
        assert self._lease is not None
        try:
            written = await self.client.update(LEASES, self.config.namespace, {**self._lease, "spec": spec})
        except (errors.ApiError, TransportError) as err:
            log.info("failed to update lock %s: %s", self.description, err)  # a conflict is an ordinary race
            return False
        self._observe(written)
        return True

    async def release(self) -> bool:
        """Give the Lease up if we hold it (client-go's ReleaseOnCancel); True if we no longer hold it.

        The Lease is read afresh first, as client-go's release does: a renewal cancelled in flight may have been
        written without our seeing its answer, and a write on the resourceVersion before it would conflict."""
        if not self.is_leader:
            return True
        try:
            self._observe(await self.client.get(LEASES, self.config.namespace, self.config.name))
        except (errors.ApiError, TransportError) as err:
            log.warning("error retrieving resource lock %s: %s", self.description, err)
            return False
        if not self.is_leader:
            return True
        stamp = micro_now()
        spec = {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": stamp, "renewTime": stamp}
        return await self._write({**spec, "leaseTransitions": self._kept()["leaseTransitions"]})

    # Loops

    async def acquire(self) -> None:
        """Return once we hold the Lease."""
        log.info("attempting to acquire leader lease %s...", self.description)
        while not await self.try_acquire_or_renew():
            await asyncio.sleep(self.config.retry_period * (1 + random.random() * JITTER))
        log.info("successfully acquired lease %s", self.description)

    async def renew(self) -> None:
        """Keep the Lease; return once no renewal succeeded within the renew deadline."""
        while True:
            await asyncio.sleep(self.config.retry_period)
            try:
                async with asyncio.timeout(self.config.renew_deadline):
                    while not await self.try_acquire_or_renew():
                        await asyncio.sleep(self.config.retry_period)
            except TimeoutError:
                log.error("failed to renew lease %s: timed out waiting for the condition", self.description)
                return

    async def run(self, work: Callable[[], Awaitable[None]]) -> None:
        """One term, as client-go's `Run`: campaign, then run `work()` while renewing.

        Raises LeadershipLost when renewing fails; returns (or raises) as `work` does if it ends. Whichever way the
        term ends, cancellation included, `work` has stopped before the Lease is released.
        """
        await self.acquire()
        working = asyncio.ensure_future(work())
        renewing = asyncio.ensure_future(self.renew())
        try:
            await self._event("became leader")
            done, _ = await asyncio.wait((working, renewing), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (working, renewing):
                task.cancel()
            await asyncio.gather(working, renewing, return_exceptions=True)
            await self._step_down()
        if working in done:
            return working.result()
        raise LeadershipLost(f"failed to renew lease {self.description}")

    async def _step_down(self) -> None:
        """Release the Lease and say so, each bounded: an apiserver that is away must not hold up a stop."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.config.renew_deadline):
                await self.release()
        await self._event("stopped leading")

    async def _event(self, what: str) -> None:
        """client-go's LeaseLock.RecordEvent: a Normal `LeaderElection` Event on the Lease."""
        if self._lease is None:
            return
        subject = {**self._lease, "apiVersion": LEASES.api_version, "kind": LEASES.kind}
        message = f"{self.config.identity} {what}"
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.config.retry_period):
                await record_event(
                    self.client,
                    subject,
                    type_="Normal",
                    reason="LeaderElection",
                    message=message,
                    component=self.config.component,
                )
