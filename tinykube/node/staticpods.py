"""Static pods and their mirror pods: how a node agent shows the components that run in its process.

A kubelet runs static pods from manifests on its disk (kubeadm's `kube-apiserver`, `etcd`, ...) and publishes a
*mirror pod* for each, so the API shows them: named `<pod>-<node>`, annotated `kubernetes.io/config.mirror` with
the manifest's hash, owned by the Node, recreated when someone deletes it, replaced when the manifest changes, and
deleted when the manifest is gone. tinykube's components run in the `up` process, not in containers; the node
agent is given them at construction (`StaticPod`, made by `wiring.py`) and publishes their mirror pods the same
way, their status Running and Ready while the process serves, their logs read from the component's own log
(`tinykube.componentlog`). Nothing runs them through the runtime: a mirror pod is only ever reported.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from tinykube.componentlog import LogSource

Object = dict[str, Any]
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
HASH_ANNOTATION = "kubernetes.io/config.hash"
SEEN_ANNOTATION = "kubernetes.io/config.seen"
SOURCE_ANNOTATION = "kubernetes.io/config.source"
SOURCE = "tinykube"  # upstream's sources are file, http and api; these pods come from the tinykube process itself
NAMESPACE = "kube-system"


@dataclass(frozen=True, slots=True)
class StaticPod:
    """One component of the process, as the pod that stands for it.

    `pod_ip`: the address the component serves pods on, for a pod without `hostNetwork` ("" : one of the node's pod
    addresses, as a simulated pod gets); a `hostNetwork` pod has the node's."""

    name: str  # the static pod's name; the mirror pod is `<name>-<node>`
    container: str
    image: str
    logs: LogSource = field(compare=False)
    labels: tuple[tuple[str, str], ...] = ()
    priority_class: str = "system-node-critical"
    host_network: bool = True
    ports: tuple[tuple[str, int, str], ...] = ()  # (name, containerPort, protocol)
    dns_policy: str = "ClusterFirst"
    pod_ip: str = ""

    def pod_name(self, node: str) -> str:
        return f"{self.name}-{node}"

    def manifest(self) -> Object:
        """The static pod as its manifest would say it (no node, no mirror annotations)."""
        container: Object = {
            "name": self.container,
            "image": self.image,
            "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
        if self.ports:
            host = self.host_network  # a host-network pod's ports are its host's
            container["ports"] = [
                {"name": name, "containerPort": port, "protocol": protocol, **({"hostPort": port} if host else {})}
                for name, port, protocol in self.ports
            ]
        spec: Object = {
            "containers": [container],
            "priorityClassName": self.priority_class,
            "restartPolicy": "Always",
            "dnsPolicy": self.dns_policy,
            "terminationGracePeriodSeconds": 30,
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
            "enableServiceLinks": True,
        }
        if self.host_network:
            spec["hostNetwork"] = True
        return {"metadata": {"name": self.name, "namespace": NAMESPACE, "labels": dict(self.labels)}, "spec": spec}

    def config_hash(self) -> str:
        """What the kubelet's `kubernetes.io/config.hash` is: a hash of the manifest (a changed one is replaced)."""
        text = json.dumps(self.manifest(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def mirror_pod(self, node: str, node_uid: str, seen: str) -> Object:
        """The mirror pod to create on `node` (owned by it, as the kubelet makes them since 1.21)."""
        pod = self.manifest()
        digest = self.config_hash()
        pod["apiVersion"], pod["kind"] = "v1", "Pod"
        meta = pod["metadata"]
        meta["name"] = self.pod_name(node)
        meta["annotations"] = {
            HASH_ANNOTATION: digest,
            MIRROR_ANNOTATION: digest,
            SEEN_ANNOTATION: seen,
            SOURCE_ANNOTATION: SOURCE,
        }
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": True}
        ]
        pod["spec"]["nodeName"] = node
        return pod


def is_mirror(pod: Object) -> bool:
    return MIRROR_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def mirrors(pod: Object, static: StaticPod, node_uid: str) -> bool:
    """Whether `pod` is the current mirror of `static` (its hash, owned by this Node), as upstream's IsMirrorPodOf."""
    meta = pod.get("metadata") or {}
    owners = meta.get("ownerReferences") or []
    owned = any(o.get("kind") == "Node" and o.get("uid") == node_uid for o in owners)
    return owned and (meta.get("annotations") or {}).get(MIRROR_ANNOTATION) == static.config_hash()


COREDNS_IMAGE = "registry.k8s.io/coredns/coredns:v1.11.3"  # what kubeadm 1.32 deploys
ETCD_IMAGE_TAG = "3.5.16-0"  # kubeadm 1.32's, when the etcd binary's version is not known


Version = tuple[int, int, int]


def _image(component: str, version: Version) -> str:
    return "registry.k8s.io/{}:v{}.{}.{}".format(component, *version)


def _control_plane(name: str, logs: LogSource, image: str) -> StaticPod:
    """A kubeadm control-plane static pod: `component=<name>`, `tier=control-plane`, host network."""
    labels = (("component", name), ("tier", "control-plane"))
    return StaticPod(name, name, image, logs, labels)


def control_plane_pods(
    logs: dict[str, LogSource], version: Version, *, etcd_version: str = "", dns_ip: str = ""
) -> list[StaticPod]:
    """The first node's static pods, as kubeadm's manifests (and its CoreDNS add-on) make them for `version`: a
    pod for each component whose log is in `logs` (`kube-apiserver`, `kube-controller-manager`, `kube-scheduler`,
    `etcd`, `coredns`: the components this process runs); `dns_ip`: where pods reach the DNS server ("": a pod
    address of the node, as any simulated pod has)."""
    pods = []
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        if name in logs:
            pods.append(_control_plane(name, logs[name], _image(name, version)))
    if "etcd" in logs:
        tag = f"{etcd_version}-0" if etcd_version[:1].isdigit() else ETCD_IMAGE_TAG
        pods.append(_control_plane("etcd", logs["etcd"], f"registry.k8s.io/etcd:{tag}"))
    if "coredns" in logs:
        pods.append(
            StaticPod(
                "coredns",
                "coredns",
                COREDNS_IMAGE,
                logs["coredns"],
                (("k8s-app", "kube-dns"),),
                priority_class="system-cluster-critical",
                host_network=False,
                ports=(("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"), ("metrics", 9153, "TCP")),
                dns_policy="Default",
                pod_ip=dns_ip,
            )
        )
    return pods


def proxy_pod(logs: LogSource, version: Version) -> StaticPod:
    """`kube-proxy-<node>`, as kubeadm's kube-proxy DaemonSet's pods are labelled (`k8s-app=kube-proxy`)."""
    image = _image("kube-proxy", version)
    return StaticPod("kube-proxy", "kube-proxy", image, logs, (("k8s-app", "kube-proxy"),))
