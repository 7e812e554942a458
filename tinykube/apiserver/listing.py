"""LIST: selectors, pagination with continue tokens, and resourceVersion semantics.

A first page comes from the watch cache. Later pages are read from etcd at the revision of the first page, as
upstream does, so a paginated list is one consistent snapshot; when that revision has been compacted the client
gets upstream's 410 Expired and starts over.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from tinykube.api import errors
from tinykube.api.resources import ResourceInfo
from tinykube.api.selectors import (
    DEFAULT_FIELDS,
    parse_field_selector,
    parse_label_selector,
    renamed_fields,
    supported_fields,
)
from tinykube.apiserver.registry import Registry
from tinykube.apiserver.storage import consistency
from tinykube.apiserver.storage.watchcache import NAME, NAMESPACE, TRIGGER_FIELDS, CachedObject, Trigger, decode
from tinykube.store.errors import Compacted

_EXPIRED_LIST = "The resourceVersion for the provided list is too old."
_INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)
LATEST = -1  # a continue token's revision for "go on at the latest revision" (upstream's, after a compaction)


@dataclass(frozen=True, slots=True)
class Page:
    items: list[CachedObject]
    revision: int
    continue_token: str
    remaining: int | None


def object_filter(resource: ResourceInfo, params: Mapping[str, str]) -> Callable[[CachedObject], bool]:
    """The label and field selectors of a request as one predicate."""
    labels = parse_label_selector(params.get("labelSelector", ""))
    fields = parse_field_selector(params.get("fieldSelector", ""), _supported_fields(resource))
    if labels.empty and fields.empty:
        return lambda _o: True
    return lambda o: labels.matches(o.labels) and fields.matches(o.obj)


def watch_trigger(resource: ResourceInfo, params: Mapping[str, str], namespace: str, name: str = "") -> Trigger | None:
    """The (field, value) every object a watch can match has, for the cache to index it by: the node of a pod
    watch pinned to one (`fieldSelector=spec.nodeName=node-1`, a kubelet's), else the name of a watch of one
    object (`fieldSelector=metadata.name=node-1`, or the object's own path), else the namespace of a namespaced
    watch."""
    fields = parse_field_selector(params.get("fieldSelector", ""), _supported_fields(resource))
    field = TRIGGER_FIELDS.get((resource.group, resource.plural))
    if field is not None and resource.custom is None and (value := fields.requires_exact_match(field)) is not None:
        return field, value
    if name or (name := fields.requires_exact_match(NAME) or ""):
        return NAME, name
    return (NAMESPACE, namespace) if namespace else None


def _supported_fields(resource: ResourceInfo) -> Collection[str]:
    """A built-in kind's field labels (a mapping to the stored kind's fields for a version that renames them); a
    custom resource's metadata fields and its version's `selectableFields`."""
    if resource.custom is None:
        return renamed_fields(resource.group, resource.plural) or supported_fields(resource.plural)
    return DEFAULT_FIELDS | frozenset(resource.custom.versions[resource.version].selectable)


def encode_continue(revision: int, start: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": start})
    return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token: str) -> tuple[int, str]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        revision, start = int(data["rv"]), str(data["start"])
    except (binascii.Error, ValueError, KeyError, TypeError, OverflowError) as err:
        raise errors.BadRequest(f"continue key is not valid: {err}") from err
    if revision == 0:
        raise errors.BadRequest(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        )
    if not start:
        raise errors.BadRequest("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
    return max(revision, LATEST), start


def _limit(params: Mapping[str, str]) -> int:
    text = params.get("limit", "0") or "0"
    try:
        return max(int(text), 0)
    except ValueError as err:
        raise errors.BadRequest(f"invalid limit {text!r}: must be an integer") from err


def _revision(text: str) -> int:
    return consistency.parse_revision(text)


async def list_objects(registry: Registry, resource: ResourceInfo, namespace: str, params: Mapping[str, str]) -> Page:
    keep = object_filter(resource, params)
    # upstream counts what is left only of an unfiltered list (etcd counts keys, not matches)
    counted = not params.get("labelSelector") and not params.get("fieldSelector")
    limit = _limit(params)
    cache = registry.cache(resource)
    if params.get("continue"):
        revision, start = decode_continue(params["continue"])
        if revision != LATEST:
            await consistency.check_not_future(registry.revisions, revision, cache)
        return await _from_store(registry, resource, namespace, keep, counted, limit, revision, start)
    wanted = params.get("resourceVersion", "")
    if wanted not in ("", "0") and params.get("resourceVersionMatch") == "Exact":
        revision = _revision(wanted)
        await consistency.check_not_future(registry.revisions, revision, cache)
        return await _from_store(registry, resource, namespace, keep, counted, limit, revision, "")
    await consistency.reach(cache, registry.revisions, wanted)
    trigger = watch_trigger(resource, params, namespace)
    found = cache.indexed_items(*trigger, namespace) if trigger else None  # a kubelet's pods: not every pod read
    items = (obj for key, obj in (cache.items(namespace) if found is None else found) if keep(obj))
    return _page(items, cache.revision, limit, counted)


def _page(items: Iterable[CachedObject], revision: int, limit: int, counted: bool) -> Page:
    if not limit:
        return Page(list(items), revision, "", None)
    chosen: list[CachedObject] = []
    rest = 0
    for obj in items:
        if len(chosen) < limit:
            chosen.append(obj)
        else:
            rest += 1
    if not rest:
        return Page(chosen, revision, "", None)
    token = encode_continue(revision, _start_after(chosen[-1]))
    return Page(chosen, revision, token, rest if counted else None)


def _start_after(obj: CachedObject) -> str:
    meta = obj.obj["metadata"]
    key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
    return key + "\0"


async def _from_store(
    registry: Registry,
    resource: ResourceInfo,
    namespace: str,
    keep: Callable[[CachedObject], bool],
    counted: bool,
    limit: int,
    revision: int,
    start: str,
) -> Page:
    prefix = resource.storage_segment + "/" + (namespace + "/" if namespace else "")
    base = resource.storage_segment + "/"
    if start and not (base + start).startswith(prefix):
        raise errors.BadRequest("continue key is not valid: it does not belong to this list")
    chosen: list[CachedObject] = []
    cursor = base + start if start else ""
    while True:
        try:
            batch = await registry.store.scan(prefix, start=cursor, limit=max(limit, 500), revision=max(revision, 0))
        except Compacted:
            if not start:  # an Exact resourceVersion list, not a continuation
                raise errors.Expired(_EXPIRED_LIST) from None
            # upstream's way on: the rest of the list at the latest revision, from the same key
            raise errors.Expired(_INCONSISTENT_CONTINUE, continue_token=encode_continue(LATEST, start)) from None
        if revision == LATEST:  # the first batch fixes the revision the rest of this list is read at
            revision = batch.revision
        for index, kv in enumerate(batch.items):
            obj = decode(kv.value, kv.mod_revision, registry.cache(resource).normalize)
            if not keep(obj):
                continue
            if limit and len(chosen) == limit:
                token = encode_continue(revision, _start_after(chosen[-1]))
                return Page(chosen, revision, token, batch.count - index if counted else None)
            chosen.append(obj)
        if not batch.more:
            return Page(chosen, revision, "", None)
        cursor = batch.items[-1].key + "\0"


def list_items(resource: ResourceInfo, raw_items: list[bytes]) -> list[bytes]:
    """The items of a list as upstream writes them: a built-in kind's items carry no `kind` and `apiVersion` (its
    typed list drops them), a custom resource's do (unstructured). The cache holds each object encoded with its
    type first, so dropping them is a slice, not a re-encode."""
    if resource.custom is not None:
        return raw_items
    head = orjson.dumps({"apiVersion": resource.api_version, "kind": resource.kind})[:-1] + b","
    out = []
    for raw in raw_items:
        if raw.startswith(head):
            out.append(b"{" + raw[len(head) :])
        else:
            obj = orjson.loads(raw)
            obj.pop("apiVersion", None)
            obj.pop("kind", None)
            out.append(orjson.dumps(obj))
    return out


def list_body(kind: str, api_version: str, page: Page, raw_items: list[bytes]) -> bytes:
    """A List response assembled from pre-serialised items: LIST of thousands of objects costs one join. It ends in
    a newline, as upstream's encoder writes one (added here, where it costs nothing, rather than by a copy)."""
    meta: dict[str, Any] = {"resourceVersion": str(page.revision)}
    if page.continue_token:
        meta["continue"] = page.continue_token
    if page.remaining is not None:
        meta["remainingItemCount"] = page.remaining
    head = orjson.dumps({"kind": kind, "apiVersion": api_version, "metadata": meta})
    return head[:-1] + b',"items":[' + b",".join(raw_items) + b"]}\n"
