"""A CPU GRPO trainer in plain torch over any HF causal LM (no openrlhf, vllm or ray).

One `step(groups)`: group-relative advantages per contiguous group (OpenRLHF's estimators), the
credit mask on flagged messages, old-policy logprobs from the training backend before the update,
reference logprobs from the frozen initial policy, then PPO epochs over micro-batches with the
TIS-masked policy loss and TIS-masked k3 KL, all divided by the batch's original valid-token
count, and one optimizer step per epoch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from weft_train.rl.batch import RLBatch, collate
from weft_train.rl.groups import Estimator, group_advantages
from weft_train.rl.loss import grpo_loss, token_logprobs
from weft_train.rl.samples import TurnSample


@dataclass(frozen=True)
class GRPOSettings:
    estimator: Estimator = "group_norm"
    lr: float = 1e-4
    kl_coef: float = 1e-3  # k3 KL as a loss term; 0 disables the reference forward
    clip_low: float = 0.2
    clip_high: float = 0.2
    tis_band: tuple[float, float] | None = (0.5, 2.0)
    temperature: float = 1.0  # the rollout temperature the logits are divided by
    micro_batch: int = 8
    ppo_epochs: int = 1
    credit_masking: bool = True
    max_grad_norm: float = 1.0


@dataclass
class StepStats:
    step: int
    groups: int
    samples: int
    action_tokens: int
    sample_reward: float  # mean reward of the trained samples (the advantage's input)
    loss: float
    policy_loss: float
    kl: float
    entropy: float
    clip_ratio: float
    tis_masked: float
    flagged_tokens: int
    extra: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class GRPOTrainer:
    def __init__(
        self,
        policy: Any,
        reference: Any | None,
        settings: GRPOSettings,
        *,
        pad_id: int,
    ) -> None:
        self.policy = policy
        self.reference = reference
        self.settings = settings
        self.pad_id = pad_id
        self.optimizer = torch.optim.AdamW(policy.parameters(), lr=settings.lr)
        self.steps = 0
        if reference is not None:
            reference.eval()
            for p in reference.parameters():
                p.requires_grad_(False)

    def _forward(self, model: Any, batch: RLBatch) -> tuple[torch.Tensor, torch.Tensor]:
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
        return token_logprobs(logits, batch.input_ids, self.settings.temperature)

    def advantages(self, groups: Sequence[Sequence[TurnSample]]) -> list[float]:
        """One advantage per sample from its group's rewards; never from KL."""
        out: list[float] = []
        for group in groups:
            out.extend(group_advantages([s.reward for s in group], self.settings.estimator))
        return out

    def step(self, groups: Sequence[Sequence[TurnSample]]) -> StepStats:
        s = self.settings
        samples = [x for g in groups for x in g]
        batch = collate(
            samples, self.advantages(groups), pad_id=self.pad_id, credit_masking=s.credit_masking
        )
        num_tokens = batch.num_action_tokens
        rows = [slice(i, i + s.micro_batch) for i in range(0, len(samples), s.micro_batch)]
        with torch.no_grad():
            self.policy.eval()
            old = torch.cat([self._forward(self.policy, batch.select(r))[0] for r in rows])
            ref = (
                torch.cat([self._forward(self.reference, batch.select(r))[0] for r in rows])
                if self.reference is not None and s.kl_coef > 0
                else None
            )
        self.policy.train()
        totals = {"loss": 0.0, "policy": 0.0, "kl": 0.0, "entropy": 0.0, "clip": 0.0, "tis": 0.0}
        for _ in range(s.ppo_epochs):
            self.optimizer.zero_grad(set_to_none=True)
            for r in rows:
                mb = batch.select(r)
                logp, entropy = self._forward(self.policy, mb)
                parts = grpo_loss(
                    logp,
                    old[r],
                    mb.advantages,
                    mb.action_mask,
                    rollout_logprobs=mb.rollout_logprobs,
                    ref_logprobs=ref[r] if ref is not None else None,
                    kl_coef=s.kl_coef,
                    clip_low=s.clip_low,
                    clip_high=s.clip_high,
                    tis_band=s.tis_band,
                    num_tokens=num_tokens,
                )
                parts.loss.backward()  # type: ignore[no-untyped-call]
                share = float(mb.action_mask.sum().item()) / max(num_tokens, 1)
                totals["loss"] += parts.loss.item()
                totals["policy"] += parts.policy_loss.item()
                totals["kl"] += parts.kl_loss.item()
                totals["entropy"] += float(
                    (entropy.detach() * mb.action_mask).sum().item() / max(num_tokens, 1)
                )
                totals["clip"] += parts.clip_ratio * share
                totals["tis"] += parts.tis_masked_share * share
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), s.max_grad_norm)
            self.optimizer.step()
        self.steps += 1
        e = s.ppo_epochs
        return StepStats(
            step=self.steps,
            groups=len(groups),
            samples=len(samples),
            action_tokens=num_tokens,
            sample_reward=float(batch.rewards.mean().item()),
            loss=totals["loss"] / e,
            policy_loss=totals["policy"] / e,
            kl=totals["kl"] / e,
            entropy=totals["entropy"] / e,
            clip_ratio=totals["clip"] / e,
            tis_masked=totals["tis"] / e,
            flagged_tokens=int((batch.credit_mask * batch.action_mask).sum().item()),
        )
