"""Checkpoint outcomes for agentic mode, where the agent does every atomic task in one turn.

Verifying every node's checkpoint on the final state would fail a node whose effect a later node
legitimately changes (update an email, then delete it). Instead the runner replays the episode's
ledger — the agent's own calls, in the order MegaMCP served them — into a shadow session group
created from the same snapshots, and after each call verifies the next pending checkpoint in
dependency order; a node passes at the first call after which its checks hold. The verifier still
runs server-side in MegaMCP on real state. The call at which each node passed also splits the
transcript into per-node segments. A replayed call whose error status differs from the original is
reported as a divergence (a nondeterministic tool) in the trace.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from weft_core.models import (
    EvaluationResult,
    FailureKind,
    LedgerEntry,
    TaskGraph,
    TraceFailure,
    Verifier,
)
from weft_core.state import CheckpointDiff
from weft_megamcp.models import VerificationResult
from weft_megamcp.service import GroupService


def verifier_failure(where: str, error: str) -> TraceFailure:
    """A verification that answered an error instead of an outcome."""
    return TraceFailure(kind=FailureKind.VERIFIER, where=where, message=error)


@dataclass
class AgenticCheckpoints:
    outcomes: dict[str, EvaluationResult | None] = field(default_factory=dict)
    passed_at: dict[str, int | None] = field(default_factory=dict)
    # The state change MegaMCP diffed when each node passed (or was last verified): since the
    # previous node passed, as the host keeps a re-verified checkpoint's start.
    diffs: dict[str, CheckpointDiff | None] = field(default_factory=dict)
    problems: list[TraceFailure] = field(default_factory=list)


async def replay_checkpoints(
    service: GroupService,
    graph: TaskGraph,
    order: list[str],
    entries: list[LedgerEntry],
    *,
    snapshots: dict[str, str | None],
    verifier: Verifier,
    evaluation: Callable[[VerificationResult], tuple[EvaluationResult | None, str | None]],
) -> AgenticCheckpoints:
    """`entries` in the order they were served; `evaluation(result) -> (EvaluationResult|None, err)`."""
    result = AgenticCheckpoints()
    shadow = await service.create_group(
        mcps=snapshots,
        verifier=verifier if verifier.has_checks else None,  # none can pass: send none
        task_id=f"{graph.id}#agentic-replay",
    )
    pending = list(order)
    try:
        for i, entry in enumerate(entries):
            if entry.error_kind is not None and entry.error_kind.is_infrastructure:
                continue
            replayed = await service.call_tool(shadow, entry.mcp, entry.tool, entry.arguments)
            if bool(replayed.is_error) != entry.is_error:
                result.problems.append(
                    TraceFailure(
                        kind=FailureKind.LEDGER,
                        where="agentic replay",
                        message=f"diverged at {entry.mcp}#{entry.seq} ({entry.tool}): "
                        f"error {entry.is_error} then {bool(replayed.is_error)}",
                    )
                )
            while pending:
                verified = await service.checkpoint_verify(shadow, pending[0])
                ev, err = evaluation(verified)
                if err:
                    result.problems.append(verifier_failure(f"checkpoint {pending[0]}", err))
                if ev is None or not ev.passed:
                    break
                result.outcomes[pending[0]] = ev
                result.diffs[pending[0]] = verified.state_diff
                result.passed_at[pending[0]] = i
                pending.pop(0)
        for node_id in pending:
            verified = await service.checkpoint_verify(shadow, node_id)
            ev, err = evaluation(verified)
            if err:
                result.problems.append(verifier_failure(f"checkpoint {node_id}", err))
            result.outcomes[node_id] = ev
            result.diffs[node_id] = verified.state_diff
            result.passed_at[node_id] = None
    finally:
        with contextlib.suppress(Exception):
            await service.close(shadow)
    return result
