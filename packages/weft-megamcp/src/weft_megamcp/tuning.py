"""Interpreter settings of a serving process: `weft-megamcp serve`, its master and its workers.

Two CPython defaults suit one-request-at-a-time programs, not a host with 1,000 live sessions:

- the cyclic garbage collector (`collector.tune_collector`);
- the GIL switch interval. A serving process runs its event loop on the main thread and sync
  tools, checkpoints, group creation and closes on worker threads, which give the GIL up at
  every syscall (each SQLite step, write, fsync, rename) and then wait for it. Under load the
  loop rarely blocks, so a waiting thread forces the loop off the GIL after the interval
  (CPython's 5 ms). A longer interval lets the loop run on; a waiting thread still gets the
  GIL as soon as the loop blocks or makes a syscall of its own (every socket send and
  receive). Measured in `benchmarks/megamcp/README.md` (one process, 1,000 concurrent
  lifecycles): ~10% less CPU per call. Context switches per call did not move with the
  setting, so the gain is not shown to come from fewer switches rather than from longer
  uninterrupted runs of the loop.

An embedded host (`MegaMCPHost.start` in someone else's process) changes neither.
"""

from __future__ import annotations

import sys

from weft_megamcp.collector import tune_collector
from weft_megamcp.settings import MegaMCPSettings

__all__ = ["tune_serving_process"]


def tune_serving_process(settings: MegaMCPSettings) -> None:
    """Apply the collector and GIL switch-interval settings to this (serving) process."""
    tune_collector(settings.gc_young_threshold)
    if settings.gil_switch_interval_s > 0:
        sys.setswitchinterval(settings.gil_switch_interval_s)
