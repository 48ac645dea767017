"""Per-harness figures of captured model calls: how many, how many with token ids, and how many
consecutive calls merged into one token sequence or broke the prefix (merge mismatches)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel

from weft_core.models import Trace
from weft_tasks.gateway.merge import merge_calls


class CaptureStats(BaseModel):
    harness: str
    rollouts: int = 0
    calls: int = 0
    calls_with_ids: int = 0
    calls_tied: int = 0
    merged: int = 0
    mismatches: int = 0
    failed_calls: int = 0


def capture_stats(traces: Iterable[Trace]) -> list[CaptureStats]:
    """One row per harness whose traces hold captured calls."""
    rows: dict[str, CaptureStats] = defaultdict(lambda: CaptureStats(harness=""))
    for trace in traces:
        if not trace.captured_calls:
            continue
        row = rows[trace.harness]
        row.harness = trace.harness
        row.rollouts += 1
        report = merge_calls(trace.captured_calls)
        row.calls += report.calls
        row.calls_with_ids += report.calls_with_ids
        row.merged += report.merged
        row.mismatches += report.mismatches
        row.calls_tied += sum(1 for c in trace.captured_calls if c.message_index is not None)
        row.failed_calls += sum(1 for c in trace.captured_calls if c.error)
    return sorted(rows.values(), key=lambda r: r.harness)
