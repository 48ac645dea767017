"""The cyclic garbage collector of a serving process, set for a host with many live sessions.

Measured (`benchmarks/megamcp/README.md`, one process, 1,000 concurrent session lifecycles):
with CPython's default thresholds (700, 10, 10) the host spent ~57 of its ~190 CPU-seconds in
the collector, 36 of them in 47 full collections. Every full collection walks every live
object: the imported stack (~200,000 objects that never die) and the objects of every open
session; at 1,000 sessions a young collection also finds many survivors (requests in flight).
A larger young threshold makes young collections rarer (allocations between them are still
found), and freezing what exists once the app is built takes the imported stack out of every
later collection (and, in a forked worker, keeps the collector from writing to pages shared
with the fork server).

Only `weft-megamcp serve` and its workers call this (through `tuning.tune_serving_process`):
an embedded host (`MegaMCPHost.start` in someone else's process) leaves that process's
collector alone.
"""

from __future__ import annotations

import gc

__all__ = ["tune_collector"]

# Full collections stay as frequent relative to young ones as CPython's defaults make them
# (one per 10 x 10 young collections): closed sessions' cyclic garbage is still reclaimed.
_OLDER = (10, 10)


def tune_collector(young_threshold: int) -> None:
    """Freeze every object that exists now and collect young objects every `young_threshold`
    net allocations (0: leave CPython's defaults and freeze nothing)."""
    if young_threshold <= 0:
        return
    gc.collect()
    gc.freeze()
    gc.set_threshold(young_threshold, *_OLDER)
