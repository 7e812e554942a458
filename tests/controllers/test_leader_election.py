"""Leader election of the controller manager (issue 17): `tinykube controllers` processes against one cluster that
runs no controllers of its own (`up --controllers ''`), and the step-down path of the controllers inside `up`.

Which process acts is made visible by giving the two processes different controllers: the first runs the
EndpointSlice controller, the second the Endpoints controller, so a Service gets an EndpointSlice only while the
first leads and Endpoints only once the second does. Every test campaigns for a Lease of its own (the
`--leader-elect-resource-name` flag), and uses short timings (4 s lease, 3 s renew deadline, 0.5 s retry period)
so that a takeover after a kill takes seconds; waits are bounded, never measured."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually, fresh_namespace, running_cluster, start_cluster, stop_cluster
from tinykube.api.resources import builtin
from tinykube.client.informer import SharedInformers
from tinykube.client.kubeconfig import load_credentials
from tinykube.client.leaderelection import JITTER, ElectionConfig, LeaderElector
from tinykube.client.rest import RestClient, TransportError
from tinykube.controllers.leader import run_elected_controllers

Object = dict[str, Any]
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 0.5
TIMINGS = ("--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms")
# A killed leader's Lease is taken over once it has not changed for a lease duration, by a candidate that retries
# every 1-2.2 retry periods: bound the wait by that, plus slack for a loaded machine (it is not a timing assertion).
TAKEOVER_BOUND = LEASE_DURATION + 2 * (1 + JITTER) * RETRY_PERIOD + 15


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    """A cluster without controllers: the processes under test are its only ones."""
    with running_cluster(tmp_path_factory.mktemp("election") / "c", "--controllers", "") as running:
        yield running


@pytest.fixture
def api(bare: RunningCluster) -> Iterator[httpx.Client]:
    with bare.http() as client:
        yield client


@pytest.fixture
def ns(api: httpx.Client, request: pytest.FixtureRequest) -> Iterator[str]:
    with fresh_namespace(api, request) as name:
        yield name


@pytest.fixture
def lease_name() -> str:
    return f"kcm-{secrets.token_hex(3)}"


@contextlib.contextmanager
def controllers(
    bare: RunningCluster, log: Path, lease_name: str, which: str, *flags: str
) -> Iterator[subprocess.Popen[bytes]]:
    """`tinykube controllers --controllers which` campaigning for `lease_name`; killed afterwards if still running."""
    command = [sys.executable, "-m", "tinykube.cli", "controllers", "--kubeconfig", str(bare.kubeconfig)]
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [*command, "--controllers", which, f"--leader-elect-resource-name={lease_name}", *flags],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def lease(api: httpx.Client, name: str) -> Object | None:
    response = api.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}")
    return response.json() if response.status_code == 200 else None


def holder(api: httpx.Client, name: str) -> str:
    found = lease(api, name)
    return str(((found or {}).get("spec") or {}).get("holderIdentity") or "")


def service(api: httpx.Client, ns: str, name: str) -> None:
    body = {"metadata": {"name": name}, "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}
    response = api.post(f"/api/v1/namespaces/{ns}/services", json=body)
    assert response.status_code == 201, response.text


def has_slice(api: httpx.Client, ns: str, name: str) -> bool:
    path = f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
    return bool(api.get(path, params={"labelSelector": f"kubernetes.io/service-name={name}"}).json()["items"])


def has_endpoints(api: httpx.Client, ns: str, name: str) -> bool:
    return api.get(f"/api/v1/namespaces/{ns}/endpoints/{name}").status_code == 200


def leader_events(api: httpx.Client, lease_name: str) -> list[str]:
    events = api.get("/api/v1/namespaces/kube-system/events").json()["items"]
    ours = [e for e in events if e["involvedObject"].get("name") == lease_name and e["reason"] == "LeaderElection"]
    assert all(e["type"] == "Normal" and e["involvedObject"]["kind"] == "Lease" for e in ours)
    return sorted(e["message"] for e in ours)


# ---- flags -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(
            ["--leader-elect-renew-deadline=20s"], "leaseDuration must be greater than renewDeadline", id="renew"
        ),
        pytest.param(
            ["--leader-elect-retry-period=9s"],
            "renewDeadline must be greater than retryPeriod*JitterFactor",
            id="retry",
        ),
        pytest.param(["--leader-elect-lease-duration=15"], 'time: invalid duration "15"', id="no-unit"),
        pytest.param(["--leader-elect=maybe"], 'parsing "maybe": invalid syntax', id="bool"),
    ],
)
def test_bad_leader_election_flags_are_refused(tmp_path: Path, flags: list[str], message: str) -> None:
    command = [sys.executable, "-m", "tinykube.cli", "controllers", "--kubeconfig", str(tmp_path / "none"), *flags]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and message in result.stderr, result.stderr


def test_election_config_checks_as_client_go() -> None:
    ElectionConfig().check()  # kube-controller-manager's defaults: 15 s, 10 s, 2 s
    with pytest.raises(ValueError, match="leaseDuration must be at least 1s"):
        ElectionConfig(lease_duration=0.5, renew_deadline=0.4, retry_period=0.1).check()


# ---- two processes ---------------------------------------------------------------------------------------------


def test_only_the_leader_acts_and_the_other_takes_over_when_it_is_killed(
    bare: RunningCluster, api: httpx.Client, ns: str, lease_name: str, tmp_path: Path
) -> None:
    log = tmp_path / "controllers.log"
    with controllers(bare, log, lease_name, "endpointslice", *TIMINGS) as first:
        first_id = eventually(lambda: holder(api, lease_name), what="a leader")
        with controllers(bare, log, lease_name, "endpoints", *TIMINGS) as second:
            service(api, ns, "before")
            eventually(lambda: has_slice(api, ns, "before"), what="the leader's EndpointSlice")
            time.sleep(2 * (1 + JITTER) * RETRY_PERIOD + 1)  # the candidate retried meanwhile, and did nothing
            assert not has_endpoints(api, ns, "before")
            held = lease(api, lease_name)
            assert held is not None and held["spec"]["holderIdentity"] == first_id
            assert held["spec"]["leaseTransitions"] == 0 and held["spec"]["leaseDurationSeconds"] == 4

            first.send_signal(signal.SIGKILL)
            first.wait(30)
            second_id = eventually(
                lambda: holder(api, lease_name) not in ("", first_id) and holder(api, lease_name),
                timeout=TAKEOVER_BOUND,
                what="a takeover within the lease duration",
            )
            assert second.poll() is None
            eventually(lambda: has_endpoints(api, ns, "before"), what="the new leader's Endpoints")
            taken = lease(api, lease_name)
            assert taken is not None and taken["spec"]["leaseTransitions"] == 1
            assert taken["spec"]["acquireTime"] > held["spec"]["acquireTime"]
    hostname = os.uname().nodename
    assert first_id.startswith(f"{hostname}_") and second_id.startswith(f"{hostname}_") and first_id != second_id
    messages = eventually(lambda: len(leader_events(api, lease_name)) == 2 and leader_events(api, lease_name))
    assert messages == sorted([f"{first_id} became leader", f"{second_id} became leader"])


def test_a_clean_stop_releases_the_lease(
    bare: RunningCluster, api: httpx.Client, lease_name: str, tmp_path: Path
) -> None:
    with controllers(bare, tmp_path / "controllers.log", lease_name, "endpointslice", *TIMINGS) as only:
        leader = eventually(lambda: holder(api, lease_name), what="a leader")
        only.send_signal(signal.SIGTERM)
        assert only.wait(30) == 0
    released = lease(api, lease_name)
    assert released is not None
    assert released["spec"]["holderIdentity"] == "" and released["spec"]["leaseDurationSeconds"] == 1
    assert f"{leader} stopped leading" in leader_events(api, lease_name)


def test_a_clean_stop_hands_over_at_once(
    bare: RunningCluster, api: httpx.Client, ns: str, lease_name: str, tmp_path: Path
) -> None:
    """With a 60 s lease, a takeover within 20 s of the leader's SIGTERM can only come from its release."""
    slow = (
        "--leader-elect-lease-duration=60s",
        "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=500ms",
    )
    log = tmp_path / "controllers.log"
    with controllers(bare, log, lease_name, "endpointslice", *slow) as first:
        first_id = eventually(lambda: holder(api, lease_name), what="a leader")
        with controllers(bare, log, lease_name, "endpoints", *slow) as second:
            time.sleep(2 * RETRY_PERIOD)  # the candidate has seen the Lease held
            first.send_signal(signal.SIGTERM)
            assert first.wait(30) == 0
            eventually(lambda: holder(api, lease_name) not in ("", first_id), timeout=20, what="the handover")
            service(api, ns, "after")
            eventually(lambda: has_endpoints(api, ns, "after"), what="the new leader's Endpoints")
            assert second.poll() is None


def test_the_release_goes_through_after_a_renewal_whose_answer_was_lost(
    bare: RunningCluster, api: httpx.Client, lease_name: str
) -> None:
    """A renewal cancelled in flight may be written without the leader seeing the answer (CI found this race):
    the release must not be refused as a conflict on the resourceVersion before it, or a clean stop hands over
    only after a whole lease duration."""
    config = ElectionConfig(identity="test_lost_answer", name=lease_name, lease_duration=4, renew_deadline=3)

    async def scenario() -> None:
        client = RestClient(load_credentials(bare.kubeconfig))
        try:
            elector = LeaderElector(client, config)
            assert await elector.try_acquire_or_renew()
            renewed = lease(api, lease_name)
            assert renewed is not None
            renewed["spec"]["renewTime"] = "2030-01-01T00:00:00.000000Z"  # the write the leader did not see
            path = f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease_name}"
            assert api.put(path, json=renewed).status_code == 200
            assert await elector.release()
        finally:
            await client.close()

    asyncio.run(scenario())
    assert holder(api, lease_name) == ""


def test_a_leader_that_cannot_renew_stops_and_exits_non_zero(
    bare: RunningCluster, api: httpx.Client, lease_name: str, tmp_path: Path
) -> None:
    """The apiserver stops answering (its process is frozen): within the renew deadline the leader gives up, and
    `tinykube controllers` exits 1 as kube-controller-manager does, for its supervisor to start a fresh one."""
    log = tmp_path / "controllers.log"
    with controllers(bare, log, lease_name, "endpointslice", *TIMINGS) as only:
        eventually(lambda: holder(api, lease_name), what="a leader")
        os.kill(bare.proc.pid, signal.SIGSTOP)
        try:
            code = only.wait(RENEW_DEADLINE + RETRY_PERIOD + 30)
        finally:
            os.kill(bare.proc.pid, signal.SIGCONT)
    assert code == 1
    assert "leaderelection lost" in log.read_text()


# ---- the controllers inside `up` -------------------------------------------------------------------------------


def test_up_releases_the_lease_when_stopped(etcd: str, tmp_path: Path) -> None:
    """`up` stops its controllers before its apiserver, so they release the Lease through it: a second `up` on the
    same etcd then finds it released."""
    shared = ("--etcd-servers", etcd, "--etcd-prefix", f"/registry-{secrets.token_hex(3)}/")
    first = start_cluster(tmp_path / "first", *shared)
    try:
        with first.http() as http:
            leader = eventually(lambda: holder(http, "kube-controller-manager"), what="up's controllers leading")
    finally:
        stop_cluster(first)
    assert first.proc.returncode == 0
    with running_cluster(tmp_path / "second", *shared, "--controllers", "") as second, second.http() as http:
        released = lease(http, "kube-controller-manager")
        assert released is not None and released["spec"]["holderIdentity"] == "", released
        assert f"{leader} stopped leading" in leader_events(http, "kube-controller-manager")
    assert (tmp_path / "first" / "controller-manager-id").read_text().strip() in leader


class Partitionable(RestClient):
    """The REST client behind a network that can be cut: while `cut`, every request fails as with a server gone."""

    cut = False

    async def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        if self.cut:
            raise TransportError("network partition (test)")
        return await super().request(method, path, body, **params)


def test_up_s_controllers_step_down_and_campaign_again(bare: RunningCluster, api: httpx.Client, ns: str) -> None:
    """`up` runs its controllers on informers it shares with DNS and proxies: a leader that cannot renew stops them
    (their handlers leave the shared informers), campaigns again, and its next term runs one set, not two."""
    creds = load_credentials(bare.kubeconfig)
    name = f"kcm-{secrets.token_hex(3)}"
    config = ElectionConfig(
        identity=f"test_{name}", name=name, lease_duration=3, renew_deadline=2, retry_period=RETRY_PERIOD
    )

    async def scenario() -> None:
        client, watcher = Partitionable(creds), RestClient(creds)
        informers = SharedInformers(watcher)
        services = informers.informer(builtin("", "v1", "services"))
        elected = run_elected_controllers(client, ["endpoints"], config, step_down=True, informers=informers)
        task = asyncio.create_task(elected)

        async def until(condition: Any, what: str, timeout: float = 30) -> None:
            await asyncio.to_thread(eventually, condition, timeout, what)

        try:
            await until(lambda: len(services._handlers) == 1, "the first term's controller")
            service(api, ns, "one")
            await until(lambda: has_endpoints(api, ns, "one"), "Endpoints in the first term")
            client.cut = True
            await until(lambda: not services._handlers, "the step-down", RENEW_DEADLINE + 2 * RETRY_PERIOD + 15)
            assert not task.done()  # campaigning again
            client.cut = False
            await until(lambda: len(services._handlers) == 1, "the second term's controller")
            service(api, ns, "two")
            await until(lambda: has_endpoints(api, ns, "two"), "Endpoints in the second term")
            assert len(services._handlers) == 1 and holder(api, name) == config.identity
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await informers.stop()
            await client.close()
            await watcher.close()
        released = lease(api, name)
        assert released is not None and released["spec"]["holderIdentity"] == ""  # cancelled: released

    asyncio.run(scenario())


def test_the_lease_goes_through_the_election_client(bare: RunningCluster, api: httpx.Client, ns: str) -> None:
    """With an `election_client`, the Lease is held through it alone: the controllers' client cut off (as one
    whose every connection is taken by a busy cluster's requests) costs no term, and the controllers keep acting
    once it is back, in the same term."""
    creds = load_credentials(bare.kubeconfig)
    name = f"kcm-{secrets.token_hex(3)}"
    config = ElectionConfig(
        identity=f"test_{name}", name=name, lease_duration=3, renew_deadline=2, retry_period=RETRY_PERIOD
    )

    async def scenario() -> None:
        client, elector, watcher = Partitionable(creds), RestClient(creds), RestClient(creds)
        informers = SharedInformers(watcher)
        services = informers.informer(builtin("", "v1", "services"))
        elected = run_elected_controllers(
            client, ["endpoints"], config, step_down=True, informers=informers, election_client=elector
        )
        task = asyncio.create_task(elected)
        try:
            await asyncio.to_thread(eventually, lambda: len(services._handlers) == 1, 30, "the first term")
            first = lease(api, name)
            assert first is not None and first["spec"]["holderIdentity"] == config.identity
            client.cut = True
            await asyncio.sleep(config.lease_duration + 2 * config.renew_deadline)  # a term lost would be over
            renewed = lease(api, name)
            assert renewed is not None and renewed["spec"]["renewTime"] != first["spec"]["renewTime"]
            assert renewed["spec"]["leaseTransitions"] == first["spec"]["leaseTransitions"]
            assert len(services._handlers) == 1  # the same term's controller, never stopped
            client.cut = False
            service(api, ns, "after")
            await asyncio.to_thread(eventually, lambda: has_endpoints(api, ns, "after"), 30, "Endpoints")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await informers.stop()
            for each in (client, elector, watcher):
                await each.close()

    asyncio.run(scenario())
