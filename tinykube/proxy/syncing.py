"""What every proxy mode keeps about its syncs (the agent's metrics read it), and the full-or-incremental rule of
the kernel modes."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator

from tinykube.proxy.model import ServicePort


class SyncCounters:
    def __init__(self) -> None:
        self.syncs = 0
        self.failures = 0
        self.full_syncs = 0
        self.last_duration = 0.0  # seconds the last sync took

    @contextlib.contextmanager
    def counted(self, full: bool) -> Iterator[None]:
        """One sync: counted, timed, and a failure when it raises."""
        start = time.monotonic()
        try:
            yield
        except Exception:
            self.failures += 1
            raise
        finally:
            self.syncs += 1
            self.last_duration = time.monotonic() - start
        self.full_syncs += full


class KernelSyncs(SyncCounters):
    """A mode that programs the kernel from what it last programmed: the first sync, the one after a failure (the
    kernel's state is unknown then) and any `full=True` one write everything (`_full`), the others only what
    changed (`_incremental`)."""

    def __init__(self) -> None:
        super().__init__()
        self.in_sync = False

    def sync(self, ports: Iterable[ServicePort], *, full: bool = False) -> None:
        full = full or not self.in_sync
        self.in_sync = False  # until this one succeeds
        with self.counted(full):
            if full:
                self._full(ports)
            else:
                self._incremental(ports)
        self.in_sync = True

    def _full(self, ports: Iterable[ServicePort]) -> None:
        raise NotImplementedError

    def _incremental(self, ports: Iterable[ServicePort]) -> None:
        raise NotImplementedError
