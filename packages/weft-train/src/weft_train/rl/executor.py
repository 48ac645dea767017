"""Where rollouts run: the `RolloutExecutor` the RL loop submits tasks to.

The loop never calls the rollout tree directly; it asks an executor for one task's rollout
(atomic-turn tree or trajectory group) and tells it when the policy's weights changed. The
default `LocalExecutor` runs rollouts as coroutines in this process against the trainer's own
model. `weft_train.rl.ray_executor.RayExecutor` (extra `weft-train[ray]`) runs the same rollout
code in async Ray actors, on this machine or across a cluster; nothing here imports Ray.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from weft_train.policy.generate import TokenGenerator
from weft_train.rl.environment import TurnEnvironment
from weft_train.rl.template import TurnTemplate
from weft_train.rl.tree import (
    RolloutResult,
    TreeSettings,
    TurnTask,
    atomic_turn_rollout,
    trajectory_rollout,
)

Method = Literal["atomic_turn", "trajectory"]
EnvFactory = Callable[[str], TurnEnvironment]  # task id -> a fresh environment of that task


@runtime_checkable
class RolloutExecutor(Protocol):
    """Contract: `rollout(method, task, tree, seed)` runs one task's rollout with the policy's
    weights as of the last `sync_policy` and returns its `RolloutResult` (groups and tree record);
    `seed` alone decides its continuation choices. Calls may run concurrently. It retries
    infrastructure failures as the tree does and otherwise raises (the sampler records the task
    as failed). `sync_policy(model)` returns once every later rollout samples from `model`'s
    current weights. `close()` frees workers; the executor is unusable afterwards."""

    async def rollout(
        self, method: Method, task: TurnTask, tree: TreeSettings, seed: int
    ) -> RolloutResult: ...

    async def sync_policy(self, model: Any) -> None: ...

    async def close(self) -> None: ...


async def run_rollout(
    method: Method,
    task: TurnTask,
    env: TurnEnvironment,
    generator: TokenGenerator,
    template: TurnTemplate,
    tree: TreeSettings,
    seed: int,
) -> RolloutResult:
    fn = atomic_turn_rollout if method == "atomic_turn" else trajectory_rollout
    return await fn(task, env, generator, template, tree, random.Random(seed))


class LocalExecutor:
    """Rollouts as coroutines of this process. The generator samples from the model the trainer
    updates in place (`HFTokenGenerator(trainer.policy)`), so `sync_policy` has nothing to do."""

    def __init__(
        self, env_for: EnvFactory, generator: TokenGenerator, template: TurnTemplate
    ) -> None:
        self.env_for = env_for
        self.generator = generator
        self.template = template

    async def rollout(
        self, method: Method, task: TurnTask, tree: TreeSettings, seed: int
    ) -> RolloutResult:
        env = self.env_for(task.task_id)
        return await run_rollout(method, task, env, self.generator, self.template, tree, seed)

    async def sync_policy(self, model: Any) -> None:
        del model

    async def close(self) -> None:
        return None
