"""Task and verifier consistency filtering (paper §3.3.2, App. B.1).

Each candidate task gets n pilot rollouts (16 in the paper). The executable verifier's score
(the trace's reward: mean of its binary checkpoint outcomes) and an independent rubric judge's
score are compared over the pilots; the task is kept only when both the Pearson and the Spearman
correlation meet their thresholds. RL then uses only executable rewards.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from weft_core.models import Disclosure, TaskGraph, Trace, ViewMode
from weft_tasks.harness import Harness
from weft_tasks.rollout import GroupService, RolloutSettings, plan_rollouts, run_rollouts
from weft_train.rl.judges import JudgeScore, RubricJudge


class ConsistencySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WEFT_TRAIN_CONSISTENCY_")

    pilot_rollouts: int = Field(default=16, ge=2, description="Pilot rollouts per task.")
    min_pearson: float = Field(default=0.5, description="Keep a task only at or above this r.")
    min_spearman: float = Field(default=0.5, description="Keep a task only at or above this rho.")
    min_scored: int = Field(
        default=4, ge=2, description="Fewest pilots with both scores for a decision."
    )
    concurrency: int = Field(default=8, ge=1, description="Judge calls in flight.")


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None when either side is constant (undefined)."""
    n = len(x)
    if n != len(y) or n < 2:
        raise ValueError(f"pearson needs two equal-length sequences of 2+ values ({n}, {len(y)})")
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def _ranks(x: Sequence[float]) -> list[float]:
    order = sorted(range(len(x)), key=lambda i: x[i])
    ranks = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1  # ties share their average rank
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson on average ranks); None when either side is constant."""
    return pearson(_ranks(x), _ranks(y))


class TaskConsistency(BaseModel):
    task_id: str
    pilots: int
    scored: int
    verifier_scores: list[float]
    judge_scores: list[float]
    pearson: float | None
    spearman: float | None
    kept: bool
    reason: str
    judge_errors: list[str] = Field(default_factory=list)


class ConsistencyReport(BaseModel):
    judge: str
    settings: dict[str, float]
    tasks: list[TaskConsistency]

    @property
    def kept(self) -> list[str]:
        return [t.task_id for t in self.tasks if t.kept]

    def save(self, path: str | Path) -> None:
        p = Path(path)
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_text(self.model_dump_json(indent=2))
        tmp.replace(p)


def decide(
    task_id: str,
    pilots: int,
    pairs: Sequence[tuple[float, float]],
    errors: list[str],
    settings: ConsistencySettings,
) -> TaskConsistency:
    v = [a for a, _ in pairs]
    j = [b for _, b in pairs]
    r = rho = None
    if len(pairs) < settings.min_scored:
        kept, reason = (
            False,
            f"only {len(pairs)} pilots scored by both (need {settings.min_scored})",
        )
    else:
        r, rho = pearson(v, j), spearman(v, j)
        if r is None or rho is None:
            side = "verifier" if len(set(v)) == 1 else "judge"
            kept, reason = False, f"{side} scores are constant: correlation undefined"
        elif r < settings.min_pearson or rho < settings.min_spearman:
            kept = False
            reason = (
                f"pearson {r:.2f} (min {settings.min_pearson}), "
                f"spearman {rho:.2f} (min {settings.min_spearman})"
            )
        else:
            kept, reason = True, f"pearson {r:.2f}, spearman {rho:.2f}"
    return TaskConsistency(
        task_id=task_id,
        pilots=pilots,
        scored=len(pairs),
        verifier_scores=v,
        judge_scores=j,
        pearson=r,
        spearman=rho,
        kept=kept,
        reason=reason,
        judge_errors=errors,
    )


def _verifier_score(trace: Trace) -> float | None:
    if trace.failed_on_infrastructure:
        return None  # never a low reward: the rollout did not run
    if not trace.segments and trace.final is None:
        return None
    return trace.reward if trace.segments else float(trace.final.passed if trace.final else 0)


async def filter_tasks(
    tasks: Sequence[TaskGraph],
    pilots: Mapping[str, Sequence[Trace]],
    judge: RubricJudge,
    settings: ConsistencySettings | None = None,
) -> ConsistencyReport:
    """Score every task's pilot traces with the verifier (already in the trace) and the judge and
    decide per task. A task without pilots is reported as not kept."""
    settings = settings or ConsistencySettings()
    sem = asyncio.Semaphore(settings.concurrency)

    async def one(task: TaskGraph, trace: Trace) -> JudgeScore:
        async with sem:
            return await judge.judge(task, trace)

    results: list[TaskConsistency] = []
    for task in tasks:
        traces = list(pilots.get(task.id, []))
        scores = await asyncio.gather(*(one(task, t) for t in traces))
        pairs: list[tuple[float, float]] = []
        errors: list[str] = []
        for trace, js in zip(traces, scores, strict=True):
            vs = _verifier_score(trace)
            if vs is None:
                errors.append(
                    f"trace {trace.id}: no executable score ({trace.error or 'no outcome'})"
                )
            elif js.score is None:
                errors.append(js.error or f"trace {trace.id}: no judge score")
            else:
                pairs.append((vs, js.score))
        results.append(decide(task.id, len(traces), pairs, errors, settings))
    return ConsistencyReport(
        judge=judge.name,
        settings={
            "pilot_rollouts": settings.pilot_rollouts,
            "min_pearson": settings.min_pearson,
            "min_spearman": settings.min_spearman,
        },
        tasks=results,
    )


async def run_pilots(
    tasks: Sequence[TaskGraph],
    service: GroupService,
    harness: Harness,
    settings: ConsistencySettings | None = None,
    *,
    out: Path | None = None,
    rollout_settings: RolloutSettings | None = None,
) -> dict[str, list[Trace]]:
    """`settings.pilot_rollouts` rollouts per task through the rollout runner (real MegaMCP
    groups, server-side checkpoint verification, physical infrastructure retries)."""
    settings = settings or ConsistencySettings()
    plans = plan_rollouts(
        tasks,
        [(ViewMode.AGENTIC, Disclosure.FULL)],
        [harness.name],
        samples=settings.pilot_rollouts,
        models={harness.name: harness.model_name},
    )
    report = await run_rollouts(
        plans, service, {harness.name: harness}, out=out, settings=rollout_settings
    )
    by_task: dict[str, list[Trace]] = {t.id: [] for t in tasks}
    for trace in report.traces:
        by_task.setdefault(trace.task_id, []).append(trace)
    return by_task
