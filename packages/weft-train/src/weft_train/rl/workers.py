"""A rollout worker that can be built anywhere from plain data: a policy folder and a MegaMCP
host's address. Remote executors (Ray actors) ship a `WorkerSpec` and call `open()` in the worker
process; nothing heavy travels: the tasks are small JSON, state stays on the MegaMCP host, and
weights arrive through `OpenWorker.load_state` after each trainer step."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field

from weft_core.models import TaskGraph
from weft_megamcp.client import MegaMCPClient
from weft_train.errors import TrainUserError
from weft_train.policy.generate import Policy
from weft_train.rl.environment import MegaMCPEnvironment
from weft_train.rl.executor import LocalExecutor
from weft_train.rl.generation import HFTokenGenerator
from weft_train.rl.template import HermesTemplate


class WorkerSpec(BaseModel):
    """Everything a rollout worker needs, picklable and JSON-able."""

    model_config = ConfigDict(frozen=True)

    policy_dir: str = Field(
        description="HF model folder (weights, config, tokenizer with chat template) of the "
        "starting policy; later weights come from sync_policy."
    )
    megamcp_url: str = Field(description="Base URL of the MegaMCP host serving the tasks.")
    megamcp_token: str = Field(description="Admin token of that host.")
    graphs: list[TaskGraph] = Field(description="The composed tasks this worker may be given.")
    torch_threads: int = Field(default=1, ge=1, description="torch intra-op threads per worker.")


@dataclass
class OpenWorker:
    executor: LocalExecutor
    model: Any  # the worker's copy of the policy, sampled by executor's generator
    client: MegaMCPClient

    def load_state(self, state: Mapping[str, torch.Tensor]) -> None:
        self.model.load_state_dict(state)

    async def aclose(self) -> None:
        await self.client.aclose()


async def open_worker(spec: WorkerSpec) -> OpenWorker:
    """Load the policy, connect to the MegaMCP host, and return a `LocalExecutor` over them."""
    torch.set_num_threads(spec.torch_threads)
    policy = Policy.load(spec.policy_dir)
    tok = policy.tokenizer
    if tok.pad_token_id is None:
        raise TrainUserError(f"{spec.policy_dir}: the tokenizer has no pad token")
    generator = HFTokenGenerator(policy.model, stop_ids=[policy.eos_id], pad_id=tok.pad_token_id)
    client = MegaMCPClient(spec.megamcp_url, spec.megamcp_token)
    graphs = {g.id: g for g in spec.graphs}

    def env_for(task_id: str) -> MegaMCPEnvironment:
        if task_id not in graphs:
            raise TrainUserError(f"worker: task {task_id!r} is not in its WorkerSpec.graphs")
        return MegaMCPEnvironment(client, graphs[task_id])

    return OpenWorker(LocalExecutor(env_for, generator, HermesTemplate(tok)), policy.model, client)
