"""Pausing the cyclic garbage collector around work that allocates many objects and makes no reference cycles
(decoding a big list, planning a full proxy table): its collections would only rescan the growing heap."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    if not gc.isenabled():  # already paused (nested, or by another thread): leave it to whoever paused it
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
