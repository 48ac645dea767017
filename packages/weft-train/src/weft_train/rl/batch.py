"""The RL batch as tensors: samples padded to one length, advantages spread over action tokens with
the credit mask applied. Position t of every [B, L-1] tensor is the prediction of token t+1 (the
`[1:]` slice OpenRLHF applies to `action_mask` and `rollout_log_probs`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from weft_train.rl.samples import TurnSample


@dataclass
class RLBatch:
    input_ids: torch.Tensor  # [B, L] long, right-padded
    attention_mask: torch.Tensor  # [B, L] long
    action_mask: torch.Tensor  # [B, L-1] float, 1 where token t+1 is model-generated
    credit_mask: torch.Tensor  # [B, L-1] float, 1 on tokens of flagged assistant messages
    rollout_logprobs: torch.Tensor  # [B, L-1] float, the rollout policy's logprob of token t+1
    advantages: torch.Tensor  # [B, L-1] float, credit-masked, 0 off-action
    rewards: torch.Tensor  # [B] float, the samples' rewards (reporting only; never the loss)

    @property
    def num_action_tokens(self) -> int:
        """The loss denominator: valid tokens before any TIS masking."""
        return int(self.action_mask.sum().item())

    def select(self, rows: slice) -> RLBatch:
        return RLBatch(
            self.input_ids[rows],
            self.attention_mask[rows],
            self.action_mask[rows],
            self.credit_mask[rows],
            self.rollout_logprobs[rows],
            self.advantages[rows],
            self.rewards[rows],
        )


def apply_credit_mask(advantages: torch.Tensor, credit_mask: torch.Tensor) -> torch.Tensor:
    """`min(A, 0)` on flagged tokens, A elsewhere."""
    return torch.where(credit_mask > 0, advantages.clamp(max=0.0), advantages)


def collate(
    samples: Sequence[TurnSample],
    advantages: Sequence[float],
    *,
    pad_id: int,
    credit_masking: bool = True,
) -> RLBatch:
    """Pad `samples` to one length; each sample's advantage goes on all its action tokens."""
    if len(samples) != len(advantages):
        raise ValueError(f"{len(samples)} samples but {len(advantages)} advantages")
    length = max(len(s.token_ids) for s in samples)
    b = len(samples)
    ids = torch.full((b, length), pad_id, dtype=torch.long)
    attn = torch.zeros((b, length), dtype=torch.long)
    action = torch.zeros((b, length), dtype=torch.float32)
    credit = torch.zeros((b, length), dtype=torch.float32)
    rollout = torch.zeros((b, length), dtype=torch.float32)
    for i, s in enumerate(samples):
        n = len(s.token_ids)
        ids[i, :n] = torch.tensor(s.token_ids, dtype=torch.long)
        attn[i, :n] = 1
        action[i, :n] = torch.tensor(s.action_mask(), dtype=torch.float32)
        credit[i, :n] = torch.tensor(s.credit_mask(), dtype=torch.float32)
        rollout[i, :n] = torch.tensor(s.rollout_logprobs, dtype=torch.float32)
    adv = torch.tensor(list(advantages), dtype=torch.float32).unsqueeze(1) * action[:, 1:]
    credit_shift = credit[:, 1:]
    if credit_masking:
        adv = apply_credit_mask(adv, credit_shift)
    return RLBatch(
        input_ids=ids,
        attention_mask=attn,
        action_mask=action[:, 1:].contiguous(),
        credit_mask=credit_shift.contiguous(),
        rollout_logprobs=rollout[:, 1:].contiguous(),
        advantages=adv,
        rewards=torch.tensor([s.reward for s in samples], dtype=torch.float32),
    )
