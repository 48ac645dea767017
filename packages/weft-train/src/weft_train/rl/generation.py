"""Batched token-level generation for rollouts over a bare HF causal LM.

weft-train has one generation contract, `weft_train.policy.TokenGenerator` (with `SamplingParams`
and `Generation`): a batch of prompts in, one `Generation` per prompt out. `Policy` implements it
one sequence at a time with a KV cache (the server); `HFTokenGenerator` here implements it for the
G candidates of an atomic turn with one left-padded transformers `generate` call (the CPU
trainer's rollouts); the OpenRLHF adapter's `VLLMTokenGenerator` with vLLM. Rollouts are
token-in/token-out: the caller owns the history and appends sampled ids and observation deltas.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import torch

from weft_train.policy.generate import Generation, SamplingParams


class HFTokenGenerator:
    """`TokenGenerator` by batched sampling with a transformers causal LM (left-padded; CPU is
    fine for tiny models). It samples from `model`'s current weights, so a trainer updating that
    model in place needs no weight sync."""

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
        if params.seed is not None:
            torch.manual_seed(params.seed)  # HF generate takes no per-request generator
        greedy = params.temperature == 0  # as Policy: raw-logit logprobs of the argmax
        sample_kw: dict[str, Any] = (
            {"do_sample": False}
            if greedy
            else {"do_sample": True, "temperature": params.temperature, "top_k": 0,
                  "top_p": params.top_p}
        )  # fmt: skip
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=attn,
                **sample_kw,
                max_new_tokens=params.max_tokens,
                eos_token_id=self.stop_ids,
                pad_token_id=self.pad_id,
                output_logits=True,
                return_dict_in_generate=True,
            )
        if was_training:
            self.model.train()
        new = out.sequences[:, width:]
        logits = torch.stack(out.logits, dim=1).float()  # [B, N, V]
        if not greedy:
            logits = logits / params.temperature
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
