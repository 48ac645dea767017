"""Token-level generation for rollouts: the `TokenGenerator` contract and its HF implementation.

Rollouts are token-in/token-out: the caller owns the token history and appends sampled ids and
observation deltas itself. `HFTokenGenerator` samples with transformers `generate` on CPU (any HF
causal LM); OpenRLHF's vLLM engine sits behind the same contract in the adapter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import torch


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 128
    temperature: float = 1.0  # top_p = 1, top_k off: the processed logprobs then match training


@dataclass
class Generation:
    token_ids: list[int]  # sampled ids, the stop token included when one was sampled
    logprobs: list[float]  # [len(token_ids)] temperature-processed logprob of each sampled id
    finish_reason: Literal["stop", "length"]


@runtime_checkable
class TokenGenerator(Protocol):
    """Contract: `generate(prompts, params)` samples one continuation per prompt (a list of ids)
    from the current frozen policy and returns the sampled ids with their processed logprobs,
    ending at the first stop id ("stop") or after `max_new_tokens` ("length"). It never
    retokenizes: the ids returned are exactly the ids sampled."""

    async def generate(
        self, prompts: Sequence[list[int]], params: SamplingParams
    ) -> list[Generation]: ...


class HFTokenGenerator:
    """Batched sampling with a transformers causal LM (left-padded; CPU is fine for tiny models)."""

    def __init__(self, model: Any, *, stop_ids: Sequence[int], pad_id: int) -> None:
        self.model = model
        self.stop_ids = list(stop_ids)
        self.pad_id = pad_id
        self.lock = asyncio.Lock()  # one generate at a time: the model is not re-entrant

    def _generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Generation]:
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attn = torch.zeros_like(ids)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.tensor(p)
            attn[i, width - len(p) :] = 1
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=attn,
                do_sample=True,
                temperature=params.temperature,
                top_k=0,
                top_p=1.0,
                max_new_tokens=params.max_new_tokens,
                eos_token_id=self.stop_ids,
                pad_token_id=self.pad_id,
                output_logits=True,
                return_dict_in_generate=True,
            )
        if was_training:
            self.model.train()
        new = out.sequences[:, width:]
        logits = torch.stack(out.logits, dim=1).float() / params.temperature  # [B, N, V]
        logp = torch.log_softmax(logits, dim=-1).gather(-1, new.unsqueeze(-1)).squeeze(-1)
        results = []
        for i in range(len(prompts)):
            row = new[i].tolist()
            end = next((k + 1 for k, t in enumerate(row) if t in self.stop_ids), None)
            n = end if end is not None else len(row)
            results.append(
                Generation(
                    token_ids=row[:n],
                    logprobs=logp[i, :n].tolist(),
                    finish_reason="stop" if end is not None else "length",
                )
            )
        return results

    async def generate(
        self, prompts: Sequence[list[int]], params: SamplingParams
    ) -> list[Generation]:
        async with self.lock:
            return await asyncio.to_thread(self._generate, prompts, params)
