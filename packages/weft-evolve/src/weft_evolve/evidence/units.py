"""Failure units from traces, and patterns across views, harnesses and models (§3.2.2).

A unit is one checkpoint outcome of one rollout that needs an explanation: a failed checkpoint,
or a passed checkpoint the rubric judge rejects. Infrastructure failures are never units (the
rollout runner retried them physically).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from weft_core.models import LedgerEntry, TaskGraph, Trace
from weft_evolve.models import CrossViewPattern, FailureUnit


def _turn_ledger(trace: Trace, seqs: dict[str, list[int]]) -> list[LedgerEntry]:
    wanted = {(m, s) for m, ss in seqs.items() for s in ss}
    return [e for e in trace.ledger if (e.mcp, e.seq) in wanted]


def failure_units(
    traces: Iterable[Trace],
    graphs: dict[str, TaskGraph],
    rubric: Callable[[TaskGraph, str, Trace, list[LedgerEntry]], list[str]] | None = None,
) -> list[FailureUnit]:
    """Failed checkpoints, plus passed checkpoints whose rubric judgement fails (`rubric` returns
    the unmet rubric items of a node for a trace; None skips the disagreement units)."""
    units: list[FailureUnit] = []
    for trace in traces:
        if trace.failed_on_infrastructure or trace.task_id not in graphs:
            continue
        graph = graphs[trace.task_id]
        task_hash = graph.content_hash or graph.compute_hash()
        for seg in trace.segments:
            if seg.outcome is None:
                continue
            ledger = _turn_ledger(trace, seg.ledger_seqs)
            base = {
                "trace_id": trace.id,
                "task_id": trace.task_id,
                "task_hash": task_hash,
                "node_id": seg.node_id,
                "view": trace.view,
                "harness": trace.harness,
                "model": trace.model,
                "ledger": ledger,
            }
            if not seg.outcome.passed:
                units.append(
                    FailureUnit(
                        unit_id=f"{trace.id}:{seg.node_id}",
                        kind="failed_checkpoint",
                        failed_checks=seg.outcome.failures,
                        **base,
                    )
                )
            elif rubric is not None:
                unmet = rubric(graph, seg.node_id, trace, ledger)
                if unmet:
                    units.append(
                        FailureUnit(
                            unit_id=f"{trace.id}:{seg.node_id}",
                            kind="rubric_disagreement",
                            rubric_failures=unmet,
                            **base,
                        )
                    )
    return units


def cross_view_patterns(traces: Iterable[Trace]) -> dict[tuple[str, str], CrossViewPattern]:
    """(task id, node id) -> outcomes across every view, harness and model of the task version."""
    out: dict[tuple[str, str], CrossViewPattern] = {}
    for trace in traces:
        if trace.failed_on_infrastructure:
            continue
        for seg in trace.segments:
            if seg.outcome is None:
                continue
            p = out.setdefault((trace.task_id, seg.node_id), CrossViewPattern())
            p.rollouts += 1
            cell = f"{trace.view}@{trace.harness}"
            if seg.outcome.passed:
                if cell not in p.views_passed:
                    p.views_passed.append(cell)
                continue
            p.failed += 1
            if cell not in p.views_failed:
                p.views_failed.append(cell)
            if trace.harness not in p.harnesses_failed:
                p.harnesses_failed.append(trace.harness)
            for o in seg.outcome.failures:
                p.check_failures[o.check_id] = p.check_failures.get(o.check_id, 0) + 1
    return out
