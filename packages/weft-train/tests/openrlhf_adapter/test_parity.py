"""Weft's plain-torch GRPO against OpenRLHF 0.11.2 on the same tensors (parity venv only)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest
import torch

from weft_train.openrlhf import bundle, credit_flags, unbundle
from weft_train.rl.batch import collate
from weft_train.rl.groups import batch_advantages
from weft_train.rl.loss import grpo_loss, kl_k3, tis_weights

from .test_bundle import groups


def tensors(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    shape = (6, 10)
    old = -torch.rand(shape, generator=g) * 3
    rollout = old + torch.randn(shape, generator=g) * 0.6  # some ratios leave [0.5, 2]
    return {
        "logprobs": (old + torch.randn(shape, generator=g) * 0.2).requires_grad_(True),
        "old": old,
        "rollout": rollout,
        "ref": old + torch.randn(shape, generator=g) * 0.3,
        "adv": torch.randn(shape[0], 1, generator=g).expand(shape).clone(),
        "mask": (torch.rand(shape, generator=g) > 0.25).float(),
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_policy_loss_equals_openrlhf_policy_loss(seed: int) -> None:
    from openrlhf.models.loss import PolicyLoss

    t = tensors(seed)
    assert not bool(tis_weights(t["old"], t["rollout"])[0].all())  # the band really masks here
    n = float(t["mask"].sum()) + 7  # a global token count larger than this micro-batch's
    ref_fn = PolicyLoss(
        0.2,
        0.28,
        is_correction_level="token",
        is_correction_mode="mask",
        is_correction_gating="ratio",
        is_correction_threshold=[0.5, 2.0],
    )
    theirs, *_ = ref_fn(
        t["logprobs"], t["old"], t["adv"], t["mask"], t["rollout"], batch_num_tokens=n
    )
    (g_theirs,) = torch.autograd.grad(theirs, t["logprobs"])
    ours = grpo_loss(
        t["logprobs"],
        t["old"],
        t["adv"],
        t["mask"],
        rollout_logprobs=t["rollout"],
        clip_low=0.2,
        clip_high=0.28,
        num_tokens=n,
    ).policy_loss
    (g_ours,) = torch.autograd.grad(ours, t["logprobs"])
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-5, abs=1e-7)
    assert torch.allclose(g_ours, g_theirs, atol=1e-7)


def test_kl_matches_k3_and_masking_is_the_intended_change() -> None:
    from openrlhf.models.loss import aggregate_loss
    from openrlhf.models.utils import compute_approx_kl

    t = tensors(3)
    theirs = compute_approx_kl(t["old"], t["ref"], kl_estimator="k3")
    assert torch.allclose(kl_k3(t["old"], t["ref"]), theirs, atol=1e-7)
    n = float(t["mask"].sum())
    keep, _ = tis_weights(t["old"], t["rollout"])
    masked_theirs = aggregate_loss(theirs * keep, t["mask"], batch_num_tokens=n)
    unmasked_theirs = aggregate_loss(theirs, t["mask"], batch_num_tokens=n)
    ours = grpo_loss(
        t["old"],
        t["old"],
        torch.zeros_like(t["old"]),
        t["mask"],
        rollout_logprobs=t["rollout"],
        ref_logprobs=t["ref"],
        kl_coef=1.0,
    ).kl_loss
    assert ours.item() == pytest.approx(masked_theirs.item(), rel=1e-6)
    assert ours.item() != pytest.approx(unmasked_theirs.item(), rel=1e-3)  # stock OpenRLHF differs


@pytest.mark.parametrize("estimator", ["group_norm", "dr_grpo"])
def test_advantages_equal_compute_advantages_and_returns(estimator: str) -> None:
    from openrlhf.trainer.ppo_utils.experience import Experience
    from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
    from openrlhf.trainer.ppo_utils.kl_controller import FixedKLController

    G = 4
    rewards = [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.5, 1.0, 1.0, 1.0, 0.0]
    args = SimpleNamespace(
        rollout=SimpleNamespace(n_samples_per_prompt=G),
        algo=SimpleNamespace(
            advantage=SimpleNamespace(estimator=estimator, gamma=1.0, lambd=1.0),
            kl=SimpleNamespace(use_loss=True),
        ),
        reward=SimpleNamespace(
            clip_range=None, overlong_buffer_len=None, stop_properly_penalty_coef=None
        ),
    )
    maker = object.__new__(RemoteExperienceMaker)
    maker.strategy = SimpleNamespace(args=args)
    maker.kl_ctl = FixedKLController(0.0)
    maker.advantage_estimator = estimator
    exps = []
    for i, r in enumerate(rewards):
        mask = torch.tensor([[0, 1, 1, 0, 1]], dtype=torch.bool)
        e = Experience(
            sequences=torch.zeros(1, 6, dtype=torch.long),
            action_mask=mask,
            attention_mask=torch.ones(1, 6, dtype=torch.long),
        )
        e.rewards = torch.tensor([r])
        e.index = [i]
        e.kl = torch.zeros(1, 5)
        e.info = {}
        exps.append(e)
    out = maker.compute_advantages_and_returns(exps)
    ours = batch_advantages(rewards, G, estimator)  # type: ignore[arg-type]
    for e, a in zip(out, ours, strict=True):
        adv = e.advantages[e.action_mask]
        assert torch.allclose(adv, torch.full_like(adv, a), atol=1e-6), (adv, a)


def test_bundles_produce_the_intended_masks_in_openrlhf() -> None:
    from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator

    gen = object.__new__(SamplesGenerator)
    gs = groups()
    batch = collate([s for g in gs for s in g], [0.0] * 4, pad_id=0)
    cands = list(itertools.chain.from_iterable(unbundle(bundle(gs, "p", "task"))))
    for i, cand in enumerate(cands):
        n = len(cand["observation_tokens"])
        exp = gen._process_response_into_experience(cand, max_len=n)
        assert exp.action_mask[0].tolist() == batch.action_mask[i, : n - 1].bool().tolist()
        assert exp.rollout_log_probs[0].tolist() == batch.rollout_logprobs[i, : n - 1].tolist()
        assert credit_flags(cand, n) == batch.credit_mask[i, : n - 1].tolist()
        assert exp.info["reward"].item() == cand["reward"]
