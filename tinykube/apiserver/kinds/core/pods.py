"""Strategy for core/v1 Pods: upstream's v1 defaulting of a pod spec (containers' pull policies, probes' handlers,
requests from limits, volume sources, the service account's two spellings), the QoS class in its status, and the
validation of creates and of `ephemeralcontainers` writes (the rules themselves are in `pod_validation.py`, shared
with every kind that holds a pod template).
"""

from __future__ import annotations

import copy
from typing import Any

from tinykube.api import errors
from tinykube.api.errors import FieldError
from tinykube.api.jsonshape import dicts
from tinykube.apiserver.kinds.core.pod_validation import validate_ephemeral_update, validate_pod_spec
from tinykube.apiserver.registry.generic import Strategy


class PodStrategy(Strategy):
    has_status = True
    return_deleted_object = True

    def prepare_create(self, obj: dict[str, Any]) -> None:
        super().prepare_create(obj)
        obj["status"] = {"phase": "Pending"}

    def prepare_admitted(self, obj: dict[str, Any]) -> None:
        """The QoS class of the pod as admitted (LimitRanger may have given its containers resources)."""
        spec = obj["spec"]
        obj["status"]["qosClass"] = qos_class(spec) if isinstance(spec, dict) else "BestEffort"

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return  # validation reports it
        default_pod_spec(spec)
        for container in [*dicts(spec.get("initContainers")), *dicts(spec.get("containers"))]:
            _default_requests_to_limits(container)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return validate_pod_spec(obj["spec"], "spec")

    def prepare_subresource_update(self, subresource: str, new: dict[str, Any], old: dict[str, Any]) -> None:
        """`ephemeralcontainers` writes spec.ephemeralContainers alone (`kubectl debug` adds one)."""
        if subresource != "ephemeralcontainers":
            raise errors.resource_not_found()
        spec = new.get("spec")
        ephemeral = spec.get("ephemeralContainers") if isinstance(spec, dict) else None
        new.clear()
        new.update(copy.deepcopy(old))
        new["spec"]["ephemeralContainers"] = ephemeral
        for container in dicts(ephemeral):
            _default_container(container)

    def validate_subresource_update(
        self, subresource: str, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[FieldError]:
        if subresource == "ephemeralcontainers":
            return validate_ephemeral_update(obj["spec"], old.get("spec") or {})
        return super().validate_subresource_update(subresource, obj, old)

    def grace_period(self, obj: dict[str, Any], requested: int | None) -> int | None:
        """The DELETE's period, else the pod's `terminationGracePeriodSeconds`; 0 for a pod no node runs (not
        scheduled, or ended), which goes at once."""
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        period = requested if requested is not None else int(spec.get("terminationGracePeriodSeconds") or 0)
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            period = 0
        return max(period, 1) if period < 0 else period


def default_pod_spec(spec: dict[str, Any]) -> None:
    """v1 PodSpec defaulting; pod templates (Deployments, ReplicaSets) get the same as pods."""
    for field, value in (
        ("restartPolicy", "Always"),
        ("dnsPolicy", "ClusterFirst"),
        ("schedulerName", "default-scheduler"),
        ("terminationGracePeriodSeconds", 30),
        ("enableServiceLinks", True),
        ("securityContext", {}),
    ):
        spec.setdefault(field, value)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in dicts(spec.get(key)):
            _default_container(container)
    for volume in dicts(spec.get("volumes")):
        _default_volume(volume)
    _mirror_service_account(spec)


def _mirror_service_account(spec: dict[str, Any]) -> None:
    """`serviceAccount` is the deprecated name of `serviceAccountName`: either one sets both (the newer wins), as
    upstream's v1 conversion of every pod spec does."""
    name = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if isinstance(name, str) and name:
        spec["serviceAccountName"] = spec["serviceAccount"] = name


def qos_class(spec: dict[str, Any]) -> str:
    """Upstream's QoS class: Guaranteed when every container limits cpu and memory with requests equal to limits,
    BestEffort when no container requests or limits anything, Burstable otherwise."""
    containers = [*dicts(spec.get("initContainers")), *dicts(spec.get("containers"))]
    resources = [r for r in (c.get("resources") for c in containers) if isinstance(r, dict)]
    if not any((r.get("requests") or r.get("limits")) for r in resources):
        return "BestEffort"
    for r in resources:
        limits: dict[str, Any] = r["limits"] if isinstance(r.get("limits"), dict) else {}
        requests: dict[str, Any] = r["requests"] if isinstance(r.get("requests"), dict) else {}
        requests = requests or limits  # requests default to limits; quantities compared as written
        if any(name not in limits or requests.get(name, limits[name]) != limits[name] for name in ("cpu", "memory")):
            return "Burstable"
    return "Guaranteed"


def _default_container(container: dict[str, Any]) -> None:
    image = str(container.get("image", ""))
    tagged = ":" in image.rsplit("/", 1)[-1] or "@" in image
    latest = not tagged or image.endswith(":latest")
    container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in dicts(container.get("ports")):
        port.setdefault("protocol", "TCP")
    for var in dicts(container.get("env")):
        field_ref = (var.get("valueFrom") or {}).get("fieldRef")
        if isinstance(field_ref, dict) and not field_ref.get("apiVersion"):
            field_ref["apiVersion"] = "v1"
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if isinstance(probe, dict):
            for field, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1)):
                probe.setdefault(field, value)
            probe.setdefault("failureThreshold", 3)
            _default_http_get(probe)
    lifecycle = container.get("lifecycle")
    for handler in (lifecycle.get(hook) if isinstance(lifecycle, dict) else None for hook in ("postStart", "preStop")):
        if isinstance(handler, dict):
            _default_http_get(handler)


def _default_requests_to_limits(container: dict[str, Any]) -> None:
    """A limit without a request requests the limit (pods only: upstream leaves pod templates as written)."""
    resources = container.get("resources")
    if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict) or not resources["limits"]:
        return
    requests = resources.setdefault("requests", {})
    if isinstance(requests, dict):
        for name, quantity in resources["limits"].items():
            requests.setdefault(name, quantity)


def _default_http_get(handler: dict[str, Any]) -> None:
    action = handler.get("httpGet")
    if isinstance(action, dict):
        action["path"] = action.get("path") or "/"
        action["scheme"] = action.get("scheme") or "HTTP"


VOLUME_MODES = ("configMap", "secret", "downwardAPI", "projected")  # sources whose files default to mode 0644


def _default_volume(volume: dict[str, Any]) -> None:
    """A volume without a source is an emptyDir; file-projecting sources default their files to 0644 (420)."""
    sources = [key for key in volume if key != "name"]
    if not sources:
        volume["emptyDir"] = {}
    for key in VOLUME_MODES:
        source = volume.get(key)
        if isinstance(source, dict):
            source.setdefault("defaultMode", 420)
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict):
        host_path.setdefault("type", "")


STRATEGIES: dict[str, type[Strategy]] = {"pods": PodStrategy}
