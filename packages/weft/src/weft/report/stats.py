"""The numbers behind each figure, computed from `RunData` (no drawing here)."""

from __future__ import annotations

from collections import Counter, defaultdict

from pydantic import BaseModel, Field

from weft.report.data import RunData, is_reference, policy_calls, task_domains
from weft_core.models import Trace


class RolloutCell(BaseModel):
    """Rollouts of one view × harness × model (the weft_tasks.rollout.stats definitions)."""

    view: str
    harness: str
    model: str
    reference: bool
    rollouts: int
    infrastructure_failed: int
    checkpoint_pass_rate: float
    task_success_rate: float
    tool_error_rate: float

    @property
    def label(self) -> str:
        tag = " [reference]" if self.reference else ""
        return f"{self.view} · {self.harness} · {self.model}{tag}"


class ErrorRate(BaseModel):
    name: str
    calls: int = 0
    errors: int = 0
    reference_calls: int = 0
    reference_errors: int = 0

    @property
    def rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0

    @property
    def reference_rate(self) -> float:
        return self.reference_errors / self.reference_calls if self.reference_calls else 0.0


class TaskShape(BaseModel):
    """Composed-task distributions (paper Fig. 5 d–e)."""

    by_profile: dict[str, int] = Field(default_factory=dict)
    turns: dict[str, list[int]] = Field(
        default_factory=dict, description="Profile -> atomic-task turns of each task."
    )
    mcps: list[int] = Field(default_factory=list, description="MCPs per task.")
    domains: list[int] = Field(default_factory=list, description="Domains per task.")


def envs_by_domain(run: RunData) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for e in run.envs:
        out[e.domain][e.status] += 1
    return dict(sorted(out.items(), key=lambda kv: -sum(kv[1].values())))


def task_shape(run: RunData) -> TaskShape:
    domain_of = run.domain_of()
    shape = TaskShape()
    for g in run.tasks:
        shape.by_profile[g.profile] = shape.by_profile.get(g.profile, 0) + 1
        shape.turns.setdefault(g.profile, []).append(len(g.nodes))
        shape.mcps.append(len(g.mcps))
        shape.domains.append(len(task_domains(g, domain_of)))
    return shape


def rollout_cells(run: RunData) -> list[RolloutCell]:
    from weft_tasks.rollout import rollout_stats

    by_model: dict[str, list[Trace]] = defaultdict(list)
    for t in run.traces:
        by_model[t.model].append(t)
    cells = []
    for model, traces in sorted(by_model.items()):
        for c in rollout_stats(traces):
            cells.append(
                RolloutCell(
                    view=c.view,
                    harness=c.harness,
                    model=model,
                    reference=is_reference(model),
                    rollouts=c.rollouts,
                    infrastructure_failed=c.infrastructure_failed,
                    checkpoint_pass_rate=c.checkpoint_pass_rate,
                    task_success_rate=c.task_success_rate,
                    tool_error_rate=c.tool_error_rate,
                )
            )
    return sorted(cells, key=lambda c: (c.reference, c.view, c.harness, c.model))


def tool_errors(run: RunData) -> tuple[list[ErrorRate], list[ErrorRate]]:
    """(per MCP, per tool "mcp.tool"), policy calls only, reference runs counted apart."""
    per_mcp: dict[str, ErrorRate] = {}
    per_tool: dict[str, ErrorRate] = {}
    for trace, entry in policy_calls(run.traces):
        ref = is_reference(trace.model)
        for table, key in ((per_mcp, entry.mcp), (per_tool, f"{entry.mcp}.{entry.tool}")):
            row = table.setdefault(key, ErrorRate(name=key))
            if ref:
                row.reference_calls += 1
                row.reference_errors += int(entry.is_error)
            else:
                row.calls += 1
                row.errors += int(entry.is_error)

    def order(rows: dict[str, ErrorRate]) -> list[ErrorRate]:
        return sorted(
            rows.values(),
            key=lambda r: (-r.rate, -r.reference_rate, -(r.calls + r.reference_calls), r.name),
        )

    return order(per_mcp), order(per_tool)
