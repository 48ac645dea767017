"""`RayExecutor`: the `RolloutExecutor` over async Ray actors (extra `weft-train[ray]`).

Rollouts are I/O-bound (generation, MegaMCP HTTP), so each actor is one process running many
rollouts as coroutines (`max_concurrency`), the shape notes/ray.md measured. Each actor builds its
own worker from a `WorkerSpec` (policy folder + MegaMCP address) and receives new weights through
the object store after each trainer step. MegaMCP stays an HTTP service outside Ray; actors only
talk to it. Only long-stable Ray APIs are used (`ray.remote`, `ray.put`, awaitable `ObjectRef`s,
`ray.kill`), which exist in 2.55 (OpenRLHF's pin) and later. The caller owns the cluster:
`ray.init(...)` (a local one, or `address="auto"`) before, `ray.shutdown()` after.

A driver started with `uv run` makes Ray (>= 2.45) start every worker with `uv run` in an
unpacked copy of the working directory, each building its own venv there: right for a cluster
whose nodes lack the environment, minutes of syncing per worker on one machine. For a local
cluster, set `RAY_ENABLE_UV_RUN_RUNTIME_ENV=0` before importing ray (the tests do) so workers run
the driver's interpreter.
"""

from __future__ import annotations

import asyncio
from typing import Any

import ray

from weft_train.errors import TrainUserError
from weft_train.rl.executor import Method
from weft_train.rl.tree import RolloutResult, TreeSettings, TurnTask
from weft_train.rl.workers import OpenWorker, WorkerSpec, open_worker


class _RolloutActor:
    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.worker: OpenWorker | None = None
        self.lock = asyncio.Lock()

    async def _open(self) -> OpenWorker:
        async with self.lock:  # concurrent first calls must not load the policy twice
            if self.worker is None:
                self.worker = await open_worker(self.spec)
            return self.worker

    async def rollout(
        self, method: Method, task: TurnTask, tree: TreeSettings, seed: int
    ) -> RolloutResult:
        worker = await self._open()
        return await worker.executor.rollout(method, task, tree, seed)

    async def load_state(self, state: dict[str, Any]) -> None:
        (await self._open()).load_state(state)

    async def close(self) -> None:
        if self.worker is not None:
            await self.worker.aclose()
            self.worker = None


class RayExecutor:
    """`workers` async actors, each running up to `concurrency` rollouts at once; tasks go to the
    actors round-robin."""

    def __init__(
        self,
        spec: WorkerSpec,
        *,
        workers: int = 2,
        concurrency: int = 8,
        num_cpus: float = 1.0,
    ) -> None:
        if not ray.is_initialized():
            raise TrainUserError(
                "RayExecutor: no Ray cluster; call ray.init(...) first (a local one, or "
                "address='auto' on a cluster)"
            )
        if workers < 1:
            raise TrainUserError(f"RayExecutor: workers must be >= 1, got {workers}")
        remote: Any = ray.remote  # its typed overloads cover functions, not actor options
        actor = remote(num_cpus=num_cpus, max_concurrency=concurrency)(_RolloutActor)
        self.actors: list[Any] = [actor.remote(spec) for _ in range(workers)]
        self.turn = 0

    async def rollout(
        self, method: Method, task: TurnTask, tree: TreeSettings, seed: int
    ) -> RolloutResult:
        actor = self.actors[self.turn % len(self.actors)]
        self.turn += 1
        result: RolloutResult = await actor.rollout.remote(method, task, tree, seed)
        return result

    async def sync_policy(self, model: Any) -> None:
        # One copy in the object store, read by every actor (zero-copy on one node).
        state = ray.put({k: v.detach().cpu() for k, v in model.state_dict().items()})
        await asyncio.gather(*(a.load_state.remote(state) for a in self.actors))

    async def close(self) -> None:
        try:
            await asyncio.gather(*(a.close.remote() for a in self.actors))
        finally:
            for a in self.actors:
                ray.kill(a)
            self.actors = []
