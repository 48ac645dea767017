"""The RL loop: dynamic sampling of rollout groups (atomic-turn trees or trajectory-level), GRPO
steps on the CPU trainer, the App. C.2 reward report per step, held-out checkpoint pass rates, all
until a rollout-token budget is spent."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from weft_train.rl.executor import Method, RolloutExecutor
from weft_train.rl.samples import TurnSample
from weft_train.rl.sampling import fill_batch
from weft_train.rl.trainer import GRPOTrainer
from weft_train.rl.tree import TreeRecord, TreeSettings, TurnTask, trajectory_rewards


@dataclass(frozen=True)
class LoopSettings:
    method: Method = "atomic_turn"
    tasks_per_step: int = 4
    token_budget: int = 50_000  # generated (rollout) tokens, the unit both methods are held to
    eval_every: int = 5  # steps
    concurrency: int = 4  # tasks rolled out at once
    max_draw_factor: int = 4  # at most this many x tasks_per_step tasks drawn for one batch
    seed: int = 0


@dataclass
class LoopResult:
    rows: list[dict[str, Any]] = field(default_factory=list)
    rollout_tokens: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    failed_tasks: list[str] = field(default_factory=list)


async def checkpoint_pass_rate(
    tasks: Sequence[TurnTask], executor: RolloutExecutor, tree: TreeSettings
) -> float:
    """Held-out checkpoint pass rate: each task run as `tree.group_size` independent trajectories;
    the mean of all their binary checkpoint outcomes."""
    outcomes: list[float] = []
    for task in tasks:
        res = await executor.rollout("trajectory", task, tree, 0)
        outcomes += [r for layer in res.record.layers for r in layer]
    return sum(outcomes) / len(outcomes) if outcomes else 0.0


async def train(
    trainer: GRPOTrainer,
    tasks: Sequence[TurnTask],
    executor: RolloutExecutor,
    tree: TreeSettings,
    settings: LoopSettings,
    *,
    heldout: Sequence[TurnTask] = (),
    eval_tree: TreeSettings | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> LoopResult:
    rng = random.Random(settings.seed)
    order = list(tasks)
    rng.shuffle(order)
    source = itertools.cycle(order)
    result = LoopResult()
    eval_tree = eval_tree or tree
    per_task = max(len(t.turns) for t in tasks) if settings.method == "atomic_turn" else 1

    async def evaluate(row: dict[str, Any]) -> None:
        if heldout:
            row["heldout_pass_rate"] = await checkpoint_pass_rate(heldout, executor, eval_tree)

    start: dict[str, Any] = {"step": 0, "rollout_tokens": 0}
    await evaluate(start)
    result.rows.append(start)
    if on_row:
        on_row(start)
    while result.rollout_tokens < settings.token_budget:
        records: list[TreeRecord] = []

        async def one(
            task: TurnTask, records: list[TreeRecord] = records
        ) -> list[list[TurnSample]]:
            res = await executor.rollout(settings.method, task, tree, rng.randrange(2**31))
            records.append(res.record)
            return res.groups

        batch = await fill_batch(
            source,
            one,
            settings.tasks_per_step * per_task,
            task_id=lambda t: t.task_id,
            concurrency=settings.concurrency,
            max_tasks=settings.max_draw_factor * settings.tasks_per_step,
        )
        result.rollout_tokens += sum(r.generated_tokens for r in records)
        for k, v in batch.stats.rejected.items():
            result.rejected[k] = result.rejected.get(k, 0) + v
        result.failed_tasks += batch.stats.failed_tasks
        row: dict[str, Any] = {
            "step": trainer.steps + 1,
            "rollout_tokens": result.rollout_tokens,
            "reward": trajectory_rewards(records, atomic=settings.method == "atomic_turn"),
            "tasks_drawn": batch.stats.tasks_drawn,
            "groups_rejected": sum(batch.stats.rejected.values()),
        }
        if batch.groups:
            stats = trainer.step(batch.groups)
            await executor.sync_policy(trainer.policy)
            row.update({k: v for k, v in stats.as_dict().items() if k not in ("step", "extra")})
        if (
            trainer.steps % settings.eval_every == 0
            or result.rollout_tokens >= settings.token_budget
        ):
            await evaluate(row)
        result.rows.append(row)
        if on_row:
            on_row(row)
    return result
