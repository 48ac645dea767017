"""Tool-chain orthogonality (paper App. A.1).

A task is redundant when its ordered tool chain is a subsequence of another task's chain: order is
kept, contiguity is not required (`[a, c]` is inside `[a, b, c]`). Of identical chains the earlier
task is kept. Sharing tools alone is not redundancy: `[a, b]` and `[b, a]` are both kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from weft_core.models import AtomicTask


def is_subsequence(inner: Sequence[str], outer: Sequence[str]) -> bool:
    """Whether `inner` occurs in `outer` in order, not necessarily contiguously."""
    it = iter(outer)
    return all(any(tool == other for other in it) for tool in inner)


class Redundancy(BaseModel):
    """Why a task was dropped: its chain is identical to or contained in `kept_by`'s chain."""

    task_id: str
    kept_by: str
    identical: bool

    @property
    def reason(self) -> str:
        how = "identical to" if self.identical else "a subsequence of"
        return f"tool chain of {self.task_id} is {how} the chain of {self.kept_by}"


def filter_orthogonal(tasks: Sequence[AtomicTask]) -> tuple[list[AtomicTask], list[Redundancy]]:
    """Split `tasks` (in priority order: earlier wins ties) into retained and redundant ones."""
    kept: list[AtomicTask] = []
    dropped: list[Redundancy] = []
    for i, task in enumerate(tasks):
        chain = task.tool_chain
        reason: Redundancy | None = None
        for j, other in enumerate(tasks):
            if i == j:
                continue
            if other.tool_chain == chain:
                if j < i:
                    reason = Redundancy(task_id=task.id, kept_by=other.id, identical=True)
                    break
            elif len(other.tool_chain) > len(chain) and is_subsequence(chain, other.tool_chain):
                reason = Redundancy(task_id=task.id, kept_by=other.id, identical=False)
                break
        if reason is None:
            kept.append(task)
        else:
            dropped.append(reason)
    return kept, dropped


def tool_coverage(retained: Sequence[AtomicTask], tools: Sequence[str]) -> float:
    """Distinct tools in the retained chains divided by the MCP's total number of tools."""
    if not tools:
        return 0.0
    toolset = set(tools)
    covered = {t for task in retained for t in task.tool_chain if t in toolset}
    return len(covered) / len(toolset)


def uncovered_tools(retained: Sequence[AtomicTask], tools: Sequence[str]) -> list[str]:
    covered = {t for task in retained for t in task.tool_chain}
    return [t for t in tools if t not in covered]
