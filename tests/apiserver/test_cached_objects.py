"""The watch cache's objects: the decoded form (shared with the in-process informers) carries no managedFields, the
encoded form that reads and watches send carries everything, and the tests' clusters are told when a receiver
changed a shared object (tinykube.api.inprocess)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tinykube.apiserver.storage import watchcache
from tinykube.apiserver.storage.watchcache import decode, stamped

MANAGED = [{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]


def stored(**data: str) -> bytes:
    obj: dict[str, Any] = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "c", "namespace": "a", "managedFields": MANAGED},
        "data": data,
    }
    return orjson.dumps(obj)


def test_the_decoded_object_has_no_managed_fields_and_what_is_sent_has_them() -> None:
    cached = decode(stored(a="1"), 7)
    assert "managedFields" not in cached.obj["metadata"]
    assert cached.obj["metadata"]["resourceVersion"] == "7" and cached.obj["data"] == {"a": "1"}
    sent = orjson.loads(cached.raw)
    assert sent["metadata"]["managedFields"] == MANAGED and sent["metadata"]["resourceVersion"] == "7"
    assert cached.full() == sent and cached.full() is not cached.full()  # the caller's own, every time


def test_a_released_object_decodes_again_without_its_managed_fields() -> None:
    cached = decode(stored(a="1"), 7)
    before = cached.obj
    cached.release()
    assert cached.obj == before and cached.obj is not before


def test_a_deletion_is_the_whole_last_state_at_its_own_revision() -> None:
    cached = decode(stored(a="1"), 7)
    gone = stamped(cached.full(), 9)
    assert orjson.loads(gone.raw)["metadata"]["managedFields"] == MANAGED
    assert gone.obj["metadata"]["resourceVersion"] == "9" and cached.obj["metadata"]["resourceVersion"] == "7"


def test_a_receiver_that_changed_a_shared_object_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    report = tmp_path / "changed"
    monkeypatch.setattr(watchcache, "SHARED_CHECK_FILE", str(report))
    untouched, changed = decode(stored(a="1"), 7), decode(stored(a="1"), 8)
    changed.obj["data"]["a"] = "2"  # what a careless controller would do to an informer's object
    untouched.release()
    assert not report.exists()
    changed.release()
    assert report.read_text() == "ConfigMap a/c 8\n"
