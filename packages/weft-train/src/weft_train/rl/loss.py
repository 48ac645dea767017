"""The atomic-turn GRPO loss (paper App. B.1) in plain torch.

PPO clip on the policy ratio; token-level truncated importance sampling (TIS) between the
training backend's old-policy and the rollout policy: the ratio weights the policy loss inside
[0.5, 2.0] and tokens outside are masked (not clipped to the ends), in the policy loss *and* in
the k3 KL term, while the denominator stays the original valid-token count. KL is a loss term;
it never enters the reward (so it never passes through advantages or the credit mask).

The formulas follow OpenRLHF 0.11.2 `PolicyLoss` (token level, mask mode, ratio gating) and
`compute_approx_kl(k3)`, so the adapter's parity tests can compare them tensor for tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

TIS_BAND = (0.5, 2.0)


@dataclass
class LossParts:
    loss: torch.Tensor  # [] policy loss + kl_coef * kl loss
    policy_loss: torch.Tensor  # []
    kl_loss: torch.Tensor  # []
    clip_ratio: float
    tis_masked_share: float  # share of valid tokens TIS masked
    num_tokens: int  # the denominator


def tis_weights(
    old_logprobs: torch.Tensor,
    rollout_logprobs: torch.Tensor,
    band: tuple[float, float] = TIS_BAND,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(keep [B,T] bool, weight [B,T]): ratio pi_old/pi_rollout; weight = ratio where kept, else 0."""
    ratio = (old_logprobs - rollout_logprobs).detach().exp()
    keep = (ratio >= band[0]) & (ratio <= band[1])
    return keep, torch.where(keep, ratio, torch.zeros_like(ratio))


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(pi || pi_ref): exp(q - p) - 1 - (q - p), bounded as OpenRLHF."""
    log_ratio = (logprobs.float() - ref_logprobs.float()).clamp(min=-10)
    return ((-log_ratio).exp() - 1 + log_ratio).clamp(min=-10, max=10)


def grpo_loss(
    logprobs: torch.Tensor,  # [B, T] current policy
    old_logprobs: torch.Tensor,  # [B, T] training backend, policy that sampled (before updates)
    advantages: torch.Tensor,  # [B, T] credit-masked
    action_mask: torch.Tensor,  # [B, T]
    *,
    rollout_logprobs: torch.Tensor | None = None,  # [B, T] the rollout engine's logprobs
    ref_logprobs: torch.Tensor | None = None,  # [B, T] reference policy
    kl_coef: float = 0.0,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    tis_band: tuple[float, float] | None = TIS_BAND,
    num_tokens: float | None = None,
) -> LossParts:
    """The loss over one (micro)batch. `num_tokens` is the valid-token count of the whole batch the
    optimizer step covers (default: this batch's); TIS never changes it."""
    mask = action_mask.float()
    denom = float(num_tokens) if num_tokens is not None else float(mask.sum().item())
    denom = max(denom, 1.0)
    ratio = (logprobs - old_logprobs).clamp(-20.0, 20.0).exp()
    surr1 = ratio * advantages
    surr2 = ratio.clamp(1 - clip_low, 1 + clip_high) * advantages
    per_token = -torch.min(surr1, surr2)
    keep = torch.ones_like(mask, dtype=torch.bool)
    if tis_band is not None and rollout_logprobs is not None:
        keep, weight = tis_weights(old_logprobs, rollout_logprobs, tis_band)
        per_token = per_token * weight
    policy = (per_token * mask).sum() / denom
    if ref_logprobs is not None and kl_coef > 0:
        kl = kl_k3(logprobs, ref_logprobs)
        kl_term = (kl * mask * keep.float()).sum() / denom
    else:
        kl_term = torch.zeros((), dtype=policy.dtype)
    valid = mask.sum().clamp(min=1)
    clipped = ((surr2 < surr1).float() * mask).sum() / valid
    masked_share = ((~keep).float() * mask).sum() / valid
    return LossParts(
        loss=policy + kl_coef * kl_term,
        policy_loss=policy,
        kl_loss=kl_term,
        clip_ratio=float(clipped.item()),
        tis_masked_share=float(masked_share.item()),
        num_tokens=int(denom),
    )


def token_logprobs(
    logits: torch.Tensor,  # [B, L, V]
    input_ids: torch.Tensor,  # [B, L]
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(logprobs [B, L-1] of each next token, entropy [B, L-1]) from logits divided by the
    rollout temperature, as vLLM's processed logprobs are."""
    logp = torch.log_softmax(logits[:, :-1].float() / temperature, dim=-1)
    chosen = logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    entropy = -(logp.exp() * logp).sum(-1)
    return chosen, entropy
