"""Store failures, independent of HTTP: the apiserver's registry maps them onto Kubernetes Status errors.

StoreError
├── KeyExists         create of a key that is present (`key` says which: the object's or a claim's)
├── KeyNotFound       update/delete of a key that is absent
├── RevisionConflict  the key's mod revision is not the one the caller expected
├── Compacted         a read or watch asked for a revision etcd has compacted away
└── StoreUnavailable  etcd did not answer (down, timeout)
"""

from __future__ import annotations


class StoreError(Exception):
    pass


class KeyExists(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class KeyNotFound(StoreError):
    pass


class RevisionConflict(StoreError):
    pass


class Compacted(StoreError):
    def __init__(self, compact_revision: int) -> None:
        super().__init__(f"revision compacted at {compact_revision}")
        self.compact_revision = compact_revision


class StoreUnavailable(StoreError):
    pass
