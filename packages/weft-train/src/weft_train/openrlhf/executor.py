"""The OpenRLHF agent executor for atomic-turn GRPO (`--train.agent_func_path`).

OpenRLHF builds `AgentExecutor()` with no arguments inside every rollout actor, so the class is
bound to its `ExecutorConfig` file by `configured_executor(path)`, called from the `agent_func.py`
the launcher generates (the dataset's label is the task id). Each `execute()` runs one task's
atomic-turn tree against MegaMCP with vLLM as the `TokenGenerator` and returns the bundle of
`bundle.py`.
Imports openrlhf: it only runs inside OpenRLHF's rollout actors.
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from openrlhf.utils.agent import AgentExecutorBase  # type: ignore[import-not-found]

from weft_core.models import TaskGraph
from weft_megamcp.client import MegaMCPClient
from weft_train.openrlhf.bundle import bundle
from weft_train.openrlhf.config import ExecutorConfig
from weft_train.policy.generate import Generation, SamplingParams
from weft_train.rl.environment import MegaMCPEnvironment
from weft_train.rl.template import HermesTemplate
from weft_train.rl.tree import TreeSettings, TurnTask, atomic_turn_rollout


class VLLMTokenGenerator:
    """`TokenGenerator` over OpenRLHF's rollout actor (`llm_engine.generate(ids, sampling_params)`
    returning a vLLM `RequestOutput`); processed logprobs of the sampled ids."""

    def __init__(self, engine: Any, base_params: Any) -> None:
        self.engine = engine
        self.base = base_params

    async def _one(self, ids: list[int], params: SamplingParams) -> Generation:
        sp = copy.copy(self.base)
        sp.max_tokens = params.max_tokens
        sp.logprobs = 1
        out = (await self.engine.generate(ids, sp)).outputs[0]
        tokens = list(out.token_ids)
        if out.logprobs:
            lps = [float(out.logprobs[i][t].logprob) for i, t in enumerate(tokens)]
        else:
            lps = [0.0] * len(tokens)
        return Generation(
            token_ids=tokens,
            logprobs=lps,
            text=str(getattr(out, "text", "") or ""),
            finish_reason="length" if out.finish_reason == "length" else "stop",
        )

    async def generate(
        self, prompts: Sequence[list[int]], params: SamplingParams
    ) -> list[Generation]:
        return list(await asyncio.gather(*(self._one(list(p), params) for p in prompts)))


class AtomicTurnExecutor(AgentExecutorBase):  # type: ignore[misc]
    config_path: str = ""

    def __init__(self) -> None:
        if not self.config_path:
            raise RuntimeError("AtomicTurnExecutor: use configured_executor(CONFIG_JSON)")
        self.config = ExecutorConfig.model_validate_json(Path(self.config_path).read_text())
        self.client: MegaMCPClient | None = None
        self.rng = random.Random(self.config.seed)

    def _task(self, graph: TaskGraph) -> TurnTask:
        return TurnTask.from_graph(graph, self.config.system)

    async def execute(
        self,
        prompt: Any,
        label: Any,
        sampling_params: Any,
        max_length: int,
        hf_tokenizer: Any,
        llm_engine: Any,
        images: Any = None,
    ) -> dict[str, Any]:
        cfg = self.config
        if self.client is None:
            self.client = MegaMCPClient(cfg.megamcp_url, cfg.admin_token)
        graph = TaskGraph.load(cfg.tasks_dir / f"{label}.json")
        settings = TreeSettings(
            group_size=cfg.group_size,
            max_messages=cfg.max_messages,
            sampling=SamplingParams(
                max_tokens=cfg.max_new_tokens,
                temperature=float(getattr(sampling_params, "temperature", 1.0)),
            ),
        )
        result = await atomic_turn_rollout(
            self._task(graph),
            MegaMCPEnvironment(self.client, graph),
            VLLMTokenGenerator(llm_engine, sampling_params),
            HermesTemplate(hf_tokenizer),
            settings,
            self.rng,
        )
        return bundle(result.groups, str(prompt), str(label))


def configured_executor(config_path: str) -> type[AtomicTurnExecutor]:
    """`AtomicTurnExecutor` bound to one `ExecutorConfig` JSON (OpenRLHF passes no arguments)."""
    ExecutorConfig.model_validate_json(Path(config_path).read_text())  # fail at load, not per task
    return type("AgentExecutor", (AtomicTurnExecutor,), {"config_path": config_path})
