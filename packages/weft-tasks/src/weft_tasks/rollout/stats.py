"""Rollout statistics: per (view, harness, policy) cell, checkpoint pass rate, task success and
tool-error rate. Rollouts that failed for infrastructure reasons are counted apart, never as policy
failures. Rollouts played by a policy that reads the answer key get the policy `reference`: their
rates hold by construction and are kept apart from any model's."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel

from weft_core.models import Trace

REFERENCE = "reference"


def policy_label(trace: Trace) -> str:
    """`reference` for answer-key policies, else the model's name."""
    return REFERENCE if trace.reference else trace.model


class CellStats(BaseModel):
    view: str
    harness: str
    policy: str = ""
    rollouts: int = 0
    infrastructure_failed: int = 0
    checkpoints: int = 0
    checkpoints_passed: int = 0
    tasks_passed: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    infrastructure_retries: int = 0

    @property
    def checkpoint_pass_rate(self) -> float:
        return self.checkpoints_passed / self.checkpoints if self.checkpoints else 0.0

    @property
    def tool_error_rate(self) -> float:
        return self.tool_errors / self.tool_calls if self.tool_calls else 0.0

    @property
    def task_success_rate(self) -> float:
        n = self.rollouts - self.infrastructure_failed
        return self.tasks_passed / n if n else 0.0


def rollout_stats(traces: Iterable[Trace]) -> list[CellStats]:
    cells: dict[tuple[str, str, str], CellStats] = defaultdict(
        lambda: CellStats(view="", harness="")
    )
    for t in traces:
        policy = policy_label(t)
        cell = cells[(t.view, t.harness, policy)]
        cell.view, cell.harness, cell.policy = t.view, t.harness, policy
        cell.rollouts += 1
        cell.infrastructure_retries += t.infrastructure_retries
        if t.failed_on_infrastructure:
            cell.infrastructure_failed += 1
            continue
        for s in t.segments:
            if s.outcome is not None:
                cell.checkpoints += 1
                cell.checkpoints_passed += int(s.outcome.passed)
        cell.tasks_passed += int(t.final is not None and t.final.passed)
        policy_calls = [
            e for e in t.ledger if not (e.error_kind and e.error_kind.is_infrastructure)
        ]
        cell.tool_calls += len(policy_calls)
        cell.tool_errors += sum(1 for e in policy_calls if e.is_error)
    return sorted(cells.values(), key=lambda c: (c.view, c.harness, c.policy))
