"""The pipeline summary: what each stage produced, printed as tables and saved as JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from weft_tasks.gateway.stats import CaptureStats


class MCPRow(BaseModel):
    name: str
    source: str
    status: str
    tools_certified: int = 0
    tools_total: int = 0
    atomic_tasks: int = 0
    coverage: float = 0.0
    reason: str | None = None


class RolloutRow(BaseModel):
    view: str
    harness: str
    policy: str = Field(
        default="", description="Model name, or 'reference' when it read the answer key."
    )
    rollouts: int
    checkpoint_pass_rate: float
    task_success_rate: float
    tool_error_rate: float
    infrastructure_failed: int = 0
    infrastructure_retries: int = 0


class PipelineSummary(BaseModel):
    out_dir: str = Field(
        default="",
        exclude=True,
        description="Where this run's corpus lies (printed, never saved: the corpus may move).",
    )
    model: str = "programmatic"
    mcps: list[MCPRow] = Field(default_factory=list)
    tasks_by_profile: dict[str, int] = Field(default_factory=dict)
    composition_failures: list[str] = Field(default_factory=list)
    rollouts: list[RolloutRow] = Field(default_factory=list)
    traces: int = 0
    traces_verified: int = Field(
        default=0, description="Traces with a final verification that agree with their ledger."
    )
    trace_problems: list[str] = Field(default_factory=list)
    model_calls: list[CaptureStats] = Field(
        default_factory=list, description="Per harness: model calls the capture gateway recorded."
    )
    traces_path: str | None = Field(
        default=None, description="The traces JSONL, relative to the corpus root (OUT)."
    )
    sft: dict[str, Any] | None = Field(
        default=None, description="The sft stage's outcome (accepted rows, teacher cost)."
    )
    stages: dict[str, str] = Field(
        default_factory=dict, description="Stage -> 'ran' | 'cached' | 'skipped: why'."
    )
    seconds: float = 0.0

    @property
    def mcps_certified(self) -> int:
        return sum(1 for m in self.mcps if m.status == "certified")

    def overall(self) -> dict[str, Any]:
        n_cp = sum(r.rollouts for r in self.rollouts)
        return {"rollouts": n_cp}


def print_summary(summary: PipelineSummary) -> None:
    from weft_core.console import get_console, summary_table

    summary_table(
        "MCP environments",
        ["mcp", "status", "tools", "atomic", "coverage"],
        [
            [
                m.name,
                m.status,
                f"{m.tools_certified}/{m.tools_total}",
                m.atomic_tasks,
                f"{m.coverage:.0%}",
            ]
            for m in summary.mcps
        ],
    )
    summary_table(
        "Composed tasks by profile",
        ["profile", "tasks"],
        [[p, n] for p, n in sorted(summary.tasks_by_profile.items())] or [["(none)", 0]],
    )
    summary_table(
        "Rollouts by view and harness",
        [
            "view",
            "harness",
            "policy",
            "n",
            "ckpt pass",
            "success",
            "tool err",
            "infra",
        ],
        [
            [
                r.view,
                r.harness,
                r.policy,
                r.rollouts,
                f"{r.checkpoint_pass_rate:.0%}",
                f"{r.task_success_rate:.0%}",
                f"{r.tool_error_rate:.1%}",
                r.infrastructure_retries,
            ]
            for r in summary.rollouts
        ],
    )
    print_capture(summary.model_calls)
    console = get_console()
    if any(r.policy == "reference" for r in summary.rollouts):
        console.print(
            "policy 'reference' read the tasks' reference calls (no model configured): its rates "
            "check the pipeline, they are not a policy's result"
        )
    console.print(
        f"MCPs certified: {summary.mcps_certified}/{len(summary.mcps)}  |  composed tasks: "
        f"{sum(summary.tasks_by_profile.values())}  |  traces verified against their ledger: "
        f"{summary.traces_verified}/{summary.traces}  |  {summary.seconds:.0f}s"
    )
    if summary.sft:
        teacher = "reference (answer key)" if summary.sft.get("reference_teacher") else "model"
        console.print(
            f"sft: {summary.sft['accepted']}/{summary.sft['tasks']} trajectories accepted, "
            f"{summary.sft['teacher_calls']} teacher calls ({teacher}) -> {summary.sft['rows_path']}"
        )
    console.print("stages: " + ", ".join(f"{k} {v}" for k, v in summary.stages.items()))
    if summary.traces_path:
        where = Path(summary.out_dir) / summary.traces_path if summary.out_dir else None
        console.print(f"traces: {where or summary.traces_path}")


def print_capture(rows: list[CaptureStats]) -> None:
    """Captured model calls per harness (nothing when no gateway ran)."""
    from weft_core.console import summary_table

    if not rows:
        return
    summary_table(
        "Model calls captured by the gateway",
        ["harness", "rollouts", "calls", "with token ids", "tied", "merged", "merge mismatches"],
        [
            [r.harness, r.rollouts, r.calls, r.calls_with_ids, r.calls_tied, r.merged, r.mismatches]
            for r in rows
        ],
    )
