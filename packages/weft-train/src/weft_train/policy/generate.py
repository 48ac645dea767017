"""A local policy: load a Hugging Face model folder, render chats to ids, sample with logprobs.

`TokenGenerator` is the one generation contract of weft-train: token ids in, sampled ids and their
*processed* logprobs (log-softmax of the temperature-scaled logits, vLLM's `processed_logprobs`) out,
for a batch of prompts at once (the G candidates of an atomic turn; a server request is a batch of
one). `Policy` implements it over its one-sequence KV-cache sampler `Policy.sample`;
`weft_train.rl.generation.HFTokenGenerator` implements it with batched HF `generate`, and the
OpenRLHF adapter with vLLM. `Policy.score` is the trainer's view of the same tokens: one forward
pass over prompt + completion. The two agree to float precision, which is what makes the rollout
logprobs usable as the behaviour policy's (tested).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import torch
from pydantic import BaseModel, ConfigDict, Field

from weft_train.errors import TrainUserError

FinishReason = Literal["stop", "length"]


class SamplingParams(BaseModel):
    """How to sample one completion (the subset of vLLM's SamplingParams a rollout needs)."""

    temperature: float = Field(default=1.0, ge=0.0, description="0 = greedy.")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="Nucleus mass kept.")
    max_tokens: int = Field(default=256, ge=1, description="Completion length limit.")
    seed: int | None = Field(default=None, description="Seed of this request's sampler.")


class Generation(BaseModel):
    """One sampled completion: ids, their processed logprobs, the decoded text, why it stopped."""

    model_config = ConfigDict(frozen=True)

    token_ids: list[int]
    logprobs: list[float] = Field(description="log p(token | prefix) after temperature scaling.")
    text: str = Field(
        default="",
        description="The completion decoded with special tokens kept ('' from a generator "
        "without a tokenizer, e.g. batched rollouts that only append ids).",
    )
    finish_reason: FinishReason


@runtime_checkable
class TokenGenerator(Protocol):
    """Contract: `await generate(prompts, params)` samples one completion per prompt (a list of
    ids), each conditioned on exactly its prompt, from the generator's current weights, and returns
    them in prompt order: the sampled ids with one processed logprob per id, ending at the first
    stop id (`finish_reason == "stop"`) or after `params.max_tokens` ("length"). It never
    re-tokenises a prompt or a completion: the ids returned are the ids sampled. Rows of one call
    sample independently (a `params.seed` seeds the call, not each row identically)."""

    async def generate(
        self, prompts: Sequence[list[int]], params: SamplingParams
    ) -> list[Generation]: ...


class Policy:
    """A causal LM and its tokenizer on CPU (or any torch device)."""

    def __init__(self, model: Any, tokenizer: Any, name: str = "policy") -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.eos_id: int = int(tokenizer.eos_token_id)
        self.max_length: int = int(getattr(model.config, "max_position_embeddings", 4096))
        # One sequence at a time: generation is CPU-bound and the model is not re-entrant.
        self.lock = threading.Lock()

    @classmethod
    def load(cls, path: str | Path, *, device: str = "cpu") -> Policy:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise TrainUserError(f"{folder}: not a model folder (no config.json)")
        tokenizer = AutoTokenizer.from_pretrained(folder)
        if not tokenizer.chat_template:
            raise TrainUserError(f"{folder}: the tokenizer has no chat template")
        model: Any = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        model = model.to(device)
        model.eval()
        return cls(model, tokenizer, name=folder.name)

    @property
    def device(self) -> torch.device:
        device: torch.device = next(self.model.parameters()).device
        return device

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = True,
    ) -> list[int]:
        """The ids of `messages` (+ `tools`) under the model's chat template."""
        ids = self.tokenizer.apply_chat_template(
            messages,
            tools=tools or None,
            add_generation_prompt=add_generation_prompt,
            tokenize=True,
            return_dict=False,
        )
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        return [int(i) for i in ids]

    def decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=False))

    async def generate(
        self, prompts: Sequence[list[int]], params: SamplingParams
    ) -> list[Generation]:
        """`TokenGenerator` over `sample`, one prompt after another in a worker thread (the model
        is not re-entrant); row i of a seeded call uses seed + i so candidates differ."""
        out: list[Generation] = []
        for i, prompt in enumerate(prompts):
            row = (
                params
                if params.seed is None
                else params.model_copy(update={"seed": params.seed + i})
            )
            out.append(await asyncio.to_thread(self.sample, list(prompt), row))
        return out

    @torch.no_grad()
    def sample(self, prompt_ids: list[int], sampling: SamplingParams) -> Generation:
        """One completion of `prompt_ids` with a KV cache (the server's and `generate`'s path)."""
        if not prompt_ids:
            raise TrainUserError("generate: empty prompt")
        room = self.max_length - len(prompt_ids)
        if room <= 0:
            raise TrainUserError(
                f"generate: prompt of {len(prompt_ids)} tokens does not fit the model's "
                f"context of {self.max_length}"
            )
        # Like vLLM, a max_tokens past the context is clamped, not refused.
        budget = min(sampling.max_tokens, room)
        gen = torch.Generator(device="cpu")
        if sampling.seed is not None:
            gen.manual_seed(sampling.seed)
        else:
            gen.seed()
        with self.lock:
            out_ids: list[int] = []
            out_lps: list[float] = []
            from transformers import DynamicCache

            cache = DynamicCache(config=self.model.config)
            step = torch.tensor([prompt_ids], device=self.device)
            finish: FinishReason = "length"
            for _ in range(budget):
                res = self.model(input_ids=step, cache=cache, use_cache=True)
                logits = res.logits[0, -1].float()
                token, logprob = _sample(logits, sampling, gen)
                out_ids.append(token)
                out_lps.append(logprob)
                if token == self.eos_id:
                    finish = "stop"
                    break
                step = torch.tensor([[token]], device=self.device)
        return Generation(
            token_ids=out_ids, logprobs=out_lps, text=self.decode(out_ids), finish_reason=finish
        )

    @torch.no_grad()
    def score(
        self, prompt_ids: list[int], completion_ids: list[int], temperature: float = 1.0
    ) -> list[float]:
        """Processed logprobs of `completion_ids` after `prompt_ids` from one forward pass."""
        ids = torch.tensor([prompt_ids + completion_ids], device=self.device)
        logits = self.model(input_ids=ids).logits[0].float()
        lps = token_logprobs(logits[:-1], ids[0, 1:], temperature)
        return [float(x) for x in lps[len(prompt_ids) - 1 :]]


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    """log p(target) under `logits` (T, V) scaled by temperature (T=0 scores the raw logits)."""
    scaled = logits / temperature if temperature > 0 else logits
    return torch.log_softmax(scaled, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def _sample(
    logits: torch.Tensor, sampling: SamplingParams, gen: torch.Generator
) -> tuple[int, float]:
    if sampling.temperature == 0:
        logprobs = torch.log_softmax(logits, dim=-1)
        token = int(torch.argmax(logits))
        return token, float(logprobs[token])
    logprobs = torch.log_softmax(logits / sampling.temperature, dim=-1)
    probs = logprobs.exp()
    if sampling.top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_p, dim=0) - sorted_p < sampling.top_p
        masked = torch.zeros_like(probs)
        masked[order[keep]] = probs[order[keep]]
        probs = masked
    token = int(torch.multinomial(probs.cpu(), 1, generator=gen))
    return token, float(logprobs[token])
