"""Admission: the plugins that run on every create and update between defaulting and storage (see chain.py).

`standard(registry)` is the chain tinykube's apiserver runs, in the order of kube-apiserver's recommended plugins
(its AllOrderedPlugins): LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds, DefaultStorageClass,
StorageObjectInUseProtection, RuntimeClass, ResourceQuota (last, so it charges what the others let through and no more).
"""

from __future__ import annotations

from collections.abc import Iterable

from tinykube.api.resources import builtin
from tinykube.apiserver.admission.chain import Chain, Plugin, forbidden
from tinykube.apiserver.admission.defaulttolerations import DefaultTolerationSeconds
from tinykube.apiserver.admission.index import NamespaceIndex
from tinykube.apiserver.admission.limitranger import LimitRanger
from tinykube.apiserver.admission.priority import Priority
from tinykube.apiserver.admission.resourcequota import ResourceQuota
from tinykube.apiserver.admission.runtimeclass import RuntimeClass
from tinykube.apiserver.admission.serviceaccount import ServiceAccount
from tinykube.apiserver.admission.storage import DefaultStorageClass, StorageObjectInUseProtection
from tinykube.apiserver.registry.generic import Registry

__all__ = ["PLUGIN_NAMES", "Chain", "Plugin", "forbidden", "standard", "unknown_plugins"]

# kube-apiserver's names for them, as `--disable-admission-plugins` takes them
PLUGIN_NAMES = (
    "LimitRanger",
    "ServiceAccount",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "RuntimeClass",
    "ResourceQuota",
)


def unknown_plugins(names: Iterable[str]) -> list[str]:
    """kube-apiserver's refusal of each name it does not run (`disable-admission-plugins plugin "X" is unknown`)."""
    return [f'disable-admission-plugins plugin "{name}" is unknown' for name in names if name not in PLUGIN_NAMES]


def standard(registry: Registry, disabled: frozenset[str] = frozenset()) -> Chain:
    """The chain, less the `disabled` plugins (envtest's apiserver runs without ServiceAccount, for one)."""
    limit_ranges = NamespaceIndex(registry.cache(builtin("", "v1", "limitranges")))
    priority_classes = registry.cache(builtin("scheduling.k8s.io", "v1", "priorityclasses"))
    accounts = ServiceAccount(
        registry.cache(builtin("", "v1", "serviceaccounts")), registry.cache(builtin("", "v1", "namespaces"))
    )
    storage_classes = registry.cache(builtin("storage.k8s.io", "v1", "storageclasses"))
    plugins: list[Plugin] = [
        LimitRanger(limit_ranges),
        accounts,
        Priority(priority_classes),
        DefaultTolerationSeconds(),
        DefaultStorageClass(storage_classes),
        StorageObjectInUseProtection(),
        RuntimeClass(registry.cache(builtin("node.k8s.io", "v1", "runtimeclasses"))),
        ResourceQuota(registry),
    ]
    return Chain([plugin for name, plugin in zip(PLUGIN_NAMES, plugins, strict=True) if name not in disabled])
