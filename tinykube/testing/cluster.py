"""`Cluster`: a real tinykube cluster for a test session, usable with or without pytest.

    with Cluster() as c:
        c.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}})
        print(c.kubectl("get", "ns", "-o", "json")["items"])

The cluster runs in a child process (`python -m tinykube.testing.server`, i.e. `tinykube up` with its etcd started
while Python imports): the tests' own threads and CPU then never stall the apiserver, a crash in one side cannot
take down the other, and the child (with its etcd) dies with the test process even when that is SIGKILLed.
Ports are chosen by the kernel (`--api-port 0 --dns-port 0`) and the data dir is a fresh temporary directory, so
any number of clusters (one per xdist worker) run side by side.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx
import yaml

from tinykube.api.crdclient import client_resource
from tinykube.api.resources import RESOURCES, ResourceInfo
from tinykube.testing import etcdreset
from tinykube.testing.server import PARENT_ENV

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

Object = dict[str, Any]
Manifest = str | Object | Sequence[Object]
Condition = str | Callable[[Any], bool]


class ClusterError(RuntimeError):
    """The cluster did not start, or a command against it failed."""


@dataclass(frozen=True, slots=True)
class DnsAnswer:
    rcode: str  # "NOERROR", "NXDOMAIN", ...
    records: list[str]  # the answer section's data, e.g. ["10.96.0.12"] or ["0 100 80 web.demo.svc.cluster.local."]


def find_resource(kind: str, crds: Sequence[Object] = ()) -> ResourceInfo:
    """A served resource by kind, plural, singular or short name, as kubectl accepts them ("svc", "Service"), or
    `plural.group` ("crontabs.stable.example.com"); a built-in one first, then one of the Established `crds`."""
    wanted = kind.lower()
    for resource in (*RESOURCES, *filter(None, map(client_resource, crds))):
        names = (resource.kind.lower(), resource.plural, resource.singular, *resource.short_names)
        if wanted in names or wanted == f"{resource.plural}.{resource.group}":
            return resource
    raise ValueError(f"unknown kind {kind!r}")


def resource_path(resource: ResourceInfo, namespace: str | None, name: str | None = None) -> str:
    base = "/api/v1" if not resource.group else f"/apis/{resource.group}/{resource.version}"
    if resource.namespaced and namespace:
        base += f"/namespaces/{namespace}"
    return f"{base}/{resource.plural}" + (f"/{name}" if name else "")


def _wants_json(args: Sequence[str]) -> bool:
    pairs = zip(args, [*args[1:], ""], strict=True)
    return any(a in ("-ojson", "--output=json") or (a in ("-o", "--output") and b == "json") for a, b in pairs)


def _met(condition: Condition, found: Any) -> bool:
    """A callable's verdict; "exists"/"deleted"; else a status condition type that must be True ("Ready")."""
    if callable(condition):
        return found is not None and bool(condition(found))
    if condition == "deleted":
        return found is None
    if found is None:
        return False
    if condition == "exists":
        return True
    wanted = condition.removeprefix("condition=")
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c.get("type") == wanted and c.get("status") == "True" for c in conditions)


class Cluster:
    """etcd + apiserver + controllers + DNS (+ `nodes` simulated node agents) on free loopback ports."""

    def __init__(
        self,
        *,
        controllers: str = "*",
        dataplane: str = "none",
        nodes: int = 1,
        data_dir: Path | None = None,
        extra_args: Iterable[str] = (),
        keep: bool = False,
        start_timeout: float = 60.0,
    ) -> None:
        self.name = f"test-{secrets.token_hex(3)}"  # unique: netns sandboxes are named after it
        self._own_parent = data_dir is None  # a temporary directory of our own, removed with the cluster
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="tinykube-test-")) / self.name
        self.args = ["--controllers", controllers, "--dataplane", dataplane, "--nodes", str(nodes), *extra_args]
        self.keep = keep  # leave it running after stop() (and the process may outlive the test process)
        self.start_timeout = start_timeout
        self.kubeconfig_path = self.data_dir / "kubeconfig"
        self.server = ""
        self.dns_address: tuple[str, int] = ("127.0.0.1", 0)
        self._proc: subprocess.Popen[bytes] | None = None
        self._http: httpx.Client | None = None
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self._api_client: ApiClient | None = None
        self._etcd: etcdreset.Etcd | None = None
        self._initial: etcdreset.Keys = {}

    # ---- life cycle -----------------------------------------------------------------------------------------

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> Cluster:
        """Returns once the cluster is ready; on any failure everything started so far is stopped."""
        self.spawn()
        return self.wait_ready()

    def spawn(self) -> None:
        """Start the cluster's process and return at once (the pytest plugin does this while pytest collects)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "tinykube.testing.server", "up", "--name", self.name]
        command += ["--data-dir", str(self.data_dir), "--api-port", "0", "--dns-port", "0", *self.args]
        env = dict(os.environ)
        if not self.keep:
            env[PARENT_ENV] = str(os.getpid())
        with open(self.data_dir / "up.log", "wb") as log:
            self._proc = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True
            )
        # Made now, while the cluster starts: the first httpx client in a process costs ~0.1 s. The CA, address
        # and token are filled in by wait_ready(), before the first request.
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self._http = httpx.Client(verify=self._tls, timeout=30)

    def wait_ready(self) -> Cluster:
        """Wait for the process started by spawn() to serve; on failure stop it (with its data dir) and raise."""
        try:
            self._connect(self._await_state())
        except BaseException:
            self.keep = False
            self.stop()
            raise
        return self

    def _await_state(self) -> Object:
        """cluster.json, which `tinykube up` writes (atomically) once every component has started."""
        state, deadline = self.data_dir / "cluster.json", time.monotonic() + self.start_timeout
        while not state.exists():
            if self._proc is None or self._proc.poll() is not None or time.monotonic() > deadline:
                raise ClusterError(f"tinykube up did not start:\n{self.log_tail()}")
            time.sleep(0.005)
        found: Object = json.loads(state.read_text())
        return found

    def _connect(self, state: Object) -> None:
        self.server = state["server"]
        if "dns" in state:
            host, port = state["dns"].rsplit(":", 1)
            self.dns_address = (host, int(port))
        self._tls.load_verify_locations(cafile=str(self.data_dir / "pki" / "ca.crt"))
        http = self.http
        http.base_url = httpx.URL(self.server)
        http.headers["Authorization"] = f"Bearer {(self.data_dir / 'token').read_text().strip()}"
        while http.get("/readyz").status_code != 200:
            time.sleep(0.005)
        self._etcd = etcdreset.Etcd((self.data_dir / "etcd-url").read_text())
        self._initial = self._etcd.keys()

    def stop(self) -> None:
        """Close every connection (an idle one would hold up the apiserver's shutdown), then stop the cluster and
        remove its data dir — unless `keep`."""
        self._close_clients()
        if self.keep or self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()  # its etcd gets SIGTERM from the kernel (parent-death signal)
                self._proc.wait()
        shutil.rmtree(self.data_dir.parent if self._own_parent else self.data_dir, ignore_errors=True)

    def _close_clients(self) -> None:
        if self._api_client is not None:
            self._api_client.close()  # type: ignore[no-untyped-call]
            self._api_client.rest_client.pool_manager.clear()  # close() leaves keep-alive connections open
            self._api_client = None
        if self._http is not None:
            self._http.close()
        self._http = self._etcd = None

    def log_tail(self, lines: int = 40) -> str:
        path = self.data_dir / "up.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    # ---- clients --------------------------------------------------------------------------------------------

    @property
    def http(self) -> httpx.Client:
        """An httpx client for the REST API (base URL, CA and token set)."""
        if self._http is None:
            raise ClusterError("the cluster is not running")
        return self._http

    @property
    def api_client(self) -> ApiClient:
        """The official `kubernetes` client's ApiClient for this cluster (its global default stays untouched);
        made on first use: importing the library takes longer than the rest of the fixture."""
        if self._api_client is None:
            from kubernetes import client, config

            configuration = client.Configuration()
            kubeconfig = str(self.kubeconfig_path)
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)  # type: ignore[no-untyped-call]
            self._api_client = client.ApiClient(configuration)
        return self._api_client

    # ---- other identities -----------------------------------------------------------------------------------

    def service_account_token(self, name: str, namespace: str = "default", *, expiration: int = 3600) -> str:
        """A token of the ServiceAccount (made first if missing), from its TokenRequest: requests bearing it are
        the account's, `system:serviceaccount:<namespace>:<name>`, and get what RBAC grants it."""
        accounts = f"/api/v1/namespaces/{namespace}/serviceaccounts"
        made = self.http.post(accounts, json={"metadata": {"name": name}})
        if made.status_code not in (201, 409):
            raise ClusterError(f"creating serviceaccount {namespace}/{name}: {made.status_code} {made.text}")
        request: Object = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}
        request["spec"] = {"expirationSeconds": expiration}
        response = self.http.post(f"{accounts}/{name}/token", json=request)
        if response.status_code != 201:
            raise ClusterError(f"token for {namespace}/{name}: {response.status_code} {response.text}")
        return str(response.json()["status"]["token"])

    def kubeconfig_for(self, name: str, namespace: str = "default", *, expiration: int = 3600) -> Path:
        """A kubeconfig of this cluster whose user is the ServiceAccount (see `service_account_token`), for
        `kubectl --kubeconfig`, the `kubernetes` client or the operator under test."""
        config = yaml.safe_load(self.kubeconfig_path.read_text())
        user = f"system:serviceaccount:{namespace}:{name}"
        config["users"] = [
            {"name": user, "user": {"token": self.service_account_token(name, namespace, expiration=expiration)}}
        ]
        for context in config["contexts"]:
            context["context"]["user"] = user
            context["context"]["namespace"] = namespace
        directory = self.data_dir / "serviceaccounts"
        directory.mkdir(exist_ok=True)
        path = directory / f"{namespace}.{name}.kubeconfig"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(config, f, sort_keys=False)
        return path

    def api_client_for(self, name: str, namespace: str = "default", *, expiration: int = 3600) -> ApiClient:
        """The `kubernetes` client's ApiClient acting as the ServiceAccount (the caller closes it)."""
        from kubernetes import client, config

        configuration = client.Configuration()
        kubeconfig = str(self.kubeconfig_for(name, namespace, expiration=expiration))
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)  # type: ignore[no-untyped-call]
        return client.ApiClient(configuration)

    def kubectl(self, *args: str, input: str | None = None, kubeconfig: Path | None = None) -> Any:
        """Run kubectl against this cluster (as the administrator, or as the user of `kubeconfig`): its stdout,
        parsed when `-o json` is asked; ClusterError on failure."""
        config_path = str(kubeconfig or self.kubeconfig_path)
        env = {**os.environ, "KUBECONFIG": config_path, "KUBECACHEDIR": str(self.data_dir / "kubectl")}
        result = subprocess.run(
            ["kubectl", *args], input=input, capture_output=True, text=True, env=env, timeout=60, check=False
        )
        if result.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return json.loads(result.stdout) if _wants_json(args) else result.stdout

    def apply(self, manifest: Manifest, *, namespace: str | None = None) -> list[Object]:
        """`kubectl apply` of YAML text, one object or a list of them; the objects as stored."""
        if isinstance(manifest, str):
            text = manifest
        else:  # JSON, not YAML: kubectl's YAML 1.1 would read a name such as `y` or `on` as a boolean
            items = [manifest] if isinstance(manifest, dict) else list(manifest)
            text = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
        args = ["apply", "-f", "-", "-o", "json"] + (["-n", namespace] if namespace else [])
        applied: Object = self.kubectl(*args, input=text)
        return list(applied["items"]) if applied.get("kind") == "List" else [applied]

    # ---- reading and waiting --------------------------------------------------------------------------------

    def resource(self, kind: str) -> ResourceInfo:
        """`find_resource`, custom resources included (the cluster's CRDs are read when the name is no built-in)."""
        try:
            return find_resource(kind)
        except ValueError:
            crds = self.http.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions").raise_for_status()
            return find_resource(kind, crds.json()["items"])

    def get(self, kind: str, name: str, *, namespace: str = "default") -> Object | None:
        """One object, or None when it does not exist."""
        response = self.http.get(resource_path(self.resource(kind), namespace, name))
        if response.status_code == 404:
            return None
        response.raise_for_status()
        found: Object = response.json()
        return found

    def list(self, kind: str, *, namespace: str | None = None, selector: str | None = None) -> list[Object]:
        """Objects of a kind, in one namespace or (namespace None) all; `selector` is a label selector."""
        params = {"labelSelector": selector} if selector else {}
        response = self.http.get(resource_path(self.resource(kind), namespace), params=params)
        response.raise_for_status()
        return list(response.json()["items"])

    def wait_for(
        self,
        kind: str,
        name: str | None,
        condition: Condition = "exists",
        timeout: float = 10.0,
        *,
        namespace: str = "default",
        selector: str | None = None,
    ) -> Any:
        """Poll until `condition` holds and return what it held for: the object named `name`, or (name None) the
        list of objects matching `selector`. A condition is a callable, "exists", "deleted", or a status condition
        type that must be True ("Ready", "condition=Ready"). TimeoutError names the last thing seen."""
        deadline = time.monotonic() + timeout
        while True:
            if name is None:
                found: Any = self.list(kind, namespace=namespace, selector=selector)
            else:
                found = self.get(kind, name, namespace=namespace)
            if _met(condition, found):
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"{kind} {name or selector!r} in {namespace!r}: not {condition!r}; last: {found!r}")
            time.sleep(0.02)

    # ---- DNS and environment --------------------------------------------------------------------------------

    def dns_query(self, name: str, type: str = "A", *, timeout: float = 5.0) -> DnsAnswer:
        """Ask the cluster's DNS server (UDP; TCP when the answer is truncated)."""
        from dnslib import RCODE, DNSRecord

        if not self.dns_address[1]:
            raise ClusterError("this cluster runs no DNS server")
        query = DNSRecord.question(name, type)
        reply = DNSRecord.parse(query.send(*self.dns_address, timeout=timeout))
        if reply.header.tc:
            reply = DNSRecord.parse(query.send(*self.dns_address, tcp=True, timeout=timeout))
        return DnsAnswer(RCODE[reply.header.rcode], [str(rr.rdata) for rr in reply.rr])

    def env_for(self, pod: str | Object, *, namespace: str = "default") -> dict[str, str]:
        """The service environment variables the kubelet gives this pod's containers (as `tinykube env`), from
        the Services that exist now; `pod` is a pod's name or a Pod object (it need not exist)."""
        from tinykube.kubelet_env.envvars import service_environment

        found = self.get("pods", pod, namespace=namespace) if isinstance(pod, str) else pod
        if found is None:
            raise ClusterError(f"pod {pod!r} not found in namespace {namespace!r}")
        found.setdefault("metadata", {}).setdefault("namespace", namespace)
        return dict(service_environment(found, self.list("services")))

    # ---- namespaces and reset -------------------------------------------------------------------------------

    def create_namespace(self, base: str = "test") -> str:
        """A new namespace named `base` plus a random suffix (a same-named one may still be terminating)."""
        readable = "".join(c if c.isalnum() else "-" for c in base.lower())[:40].strip("-") or "test"
        name = f"{readable}-{secrets.token_hex(3)}"
        response = self.http.post("/api/v1/namespaces", json={"metadata": {"name": name}})
        if response.status_code != 201:
            raise ClusterError(f"creating namespace {name}: {response.status_code} {response.text}")
        return name

    def delete_namespace(self, name: str, timeout: float = 30.0) -> None:
        """Delete a namespace and wait until it is gone: the namespace controller deletes its objects first."""
        response = self.http.delete(f"/api/v1/namespaces/{name}")
        if response.status_code not in (200, 202, 404):
            raise ClusterError(f"deleting namespace {name}: {response.status_code} {response.text}")
        self.wait_for("namespace", name, "deleted", timeout)

    def reset(self) -> None:
        """Back to the state right after start-up: objects created since are gone (every namespace but the
        initial ones, and whatever was added to those), and the initial objects a test changed or deleted are
        written back. Node heartbeats and leases are left as the node agents keep them."""
        assert self._etcd is not None, "the cluster is not running"
        for _attempt in range(5):  # again if a controller wrote something while the first sweep went by
            plan = etcdreset.plan_reset(self._initial, self._etcd.keys())
            if not plan:
                return
            revision = self._etcd.apply(plan)
            for resource in etcdreset.touched(plan):
                self._await_cache(resource, revision)
        raise ClusterError("reset: objects kept coming back")

    def _await_cache(self, resource: ResourceInfo, revision: int) -> None:
        """The apiserver answers from its watch caches: a LIST at `revision` returns once that cache has seen it
        (so the test after a reset reads the reset state)."""
        params = {"resourceVersion": str(revision), "limit": "1"}
        self.http.get(resource_path(resource, None), params=params).raise_for_status()
