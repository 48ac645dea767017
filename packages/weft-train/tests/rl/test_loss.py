import math

import pytest
import torch

from weft_train.rl.batch import collate
from weft_train.rl.credit import CreditFlag
from weft_train.rl.loss import grpo_loss, kl_k3, tis_weights, token_logprobs
from weft_train.rl.samples import ActionSpan, TurnSample


def _setup() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    old = torch.log(torch.full((2, 4), 0.5))
    rollout = old.clone()
    # token (0, 1): pi_old/pi_rollout = 0.25, outside [0.5, 2]; token (1, 2): 1.5, inside.
    rollout[0, 1] = old[0, 1] - math.log(0.25)
    rollout[1, 2] = old[1, 2] - math.log(1.5)
    return {
        "logprobs": old.clone().requires_grad_(True),
        "old": old,
        "rollout": rollout,
        "ref": old - 0.3,
        "adv": torch.tensor([[1.0] * 4, [-1.0] * 4]),
        "mask": torch.ones(2, 4),
    }


def test_tis_masks_outside_the_band_and_weights_inside() -> None:
    t = _setup()
    keep, weight = tis_weights(t["old"], t["rollout"])
    assert not keep[0, 1] and keep.sum() == 7
    assert weight[0, 1] == 0 and weight[1, 2] == pytest.approx(1.5)
    out = grpo_loss(t["logprobs"], t["old"], t["adv"], t["mask"], rollout_logprobs=t["rollout"])
    out.loss.backward()
    grad = t["logprobs"].grad
    assert grad is not None
    assert grad[0, 1] == 0.0  # masked, not clipped to 0.5 (which would leave a gradient)
    assert grad[0, 0] != 0.0
    assert grad[1, 2] == pytest.approx(1.5 * grad[1, 0])  # the ratio weights surviving tokens
    assert out.tis_masked_share == pytest.approx(1 / 8)


def test_denominator_is_the_original_valid_token_count() -> None:
    t = _setup()
    out = grpo_loss(t["logprobs"], t["old"], t["adv"], t["mask"], rollout_logprobs=t["rollout"])
    # ratio 1 -> per-token loss -A * tis weight; row 0 keeps 3 tokens at +1, row 1 sums -(1+1+1.5+1)
    expected = (-3.0 + 4.5) / 8  # 8 valid tokens, not 7 after masking
    assert out.policy_loss.item() == pytest.approx(expected)
    assert out.num_tokens == 8


def test_kl_is_masked_by_tis_with_the_same_denominator() -> None:
    t = _setup()
    out = grpo_loss(
        t["logprobs"],
        t["old"],
        torch.zeros(2, 4),
        t["mask"],
        rollout_logprobs=t["rollout"],
        ref_logprobs=t["ref"],
        kl_coef=0.1,
    )
    per_token = kl_k3(t["old"], t["ref"])
    keep, _ = tis_weights(t["old"], t["rollout"])
    assert out.kl_loss.item() == pytest.approx((per_token * keep).sum().item() / 8)
    out.loss.backward()
    grad = t["logprobs"].grad
    assert grad is not None and grad[0, 1] == 0.0 and grad[0, 0] != 0.0


def test_no_tis_without_rollout_logprobs_and_no_kl_without_coef() -> None:
    t = _setup()
    out = grpo_loss(t["logprobs"], t["old"], t["adv"], t["mask"], ref_logprobs=t["ref"])
    assert out.policy_loss.item() == pytest.approx(0.0)  # +1 x4, -1 x4 at ratio 1
    assert out.kl_loss.item() == 0.0 and out.tis_masked_share == 0.0


def test_ppo_clip_stops_gradient_beyond_the_trust_region() -> None:
    old = torch.zeros(1, 2)
    logprobs = torch.tensor([[0.5, 0.05]], requires_grad=True)  # ratios e^0.5 > 1.2, e^0.05
    out = grpo_loss(logprobs, old, torch.ones(1, 2), torch.ones(1, 2), tis_band=None)
    out.loss.backward()
    assert logprobs.grad is not None
    assert logprobs.grad[0, 0] == 0.0 and logprobs.grad[0, 1] != 0.0
    assert out.clip_ratio == pytest.approx(0.5)


def test_k3_matches_its_definition() -> None:
    p, q = torch.tensor([-1.0]), torch.tensor([-1.5])
    assert kl_k3(p, q).item() == pytest.approx(math.exp(-0.5) - 1 + 0.5)


def test_collate_spreads_advantage_and_applies_credit_mask() -> None:
    flagged = frozenset({CreditFlag.NO_PROGRESS_REPEAT})
    good = TurnSample(
        "t",
        0,
        0,
        [5, 6, 7, 8, 9],
        [ActionSpan(1, 3, flagged), ActionSpan(4, 5)],
        [0.0, -1.0, -1.0, 0.0, -2.0],
        1.0,
    )
    bad = TurnSample("t", 0, 1, [5, 6, 7], [ActionSpan(1, 3, flagged)], [0.0, -1.0, -1.0], 0.0)
    batch = collate([good, bad], [0.7, -0.7], pad_id=0)
    assert batch.input_ids.tolist() == [[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]]
    assert batch.action_mask.tolist() == [[1, 1, 0, 1], [1, 1, 0, 0]]
    # flagged span: positive advantage removed; the unflagged recovery span keeps it
    assert batch.advantages[0].tolist() == pytest.approx([0.0, 0.0, 0.0, 0.7])
    # flagged span with negative advantage keeps it
    assert batch.advantages[1].tolist() == pytest.approx([-0.7, -0.7, 0.0, 0.0])
    assert batch.rollout_logprobs[0].tolist() == [-1.0, -1.0, 0.0, -2.0]
    assert batch.num_action_tokens == 5
    unmasked = collate([good], [0.7], pad_id=0, credit_masking=False)
    assert unmasked.advantages[0].tolist() == pytest.approx([0.7, 0.7, 0.0, 0.7])


def test_token_logprobs_divide_by_temperature() -> None:
    logits = torch.tensor([[[2.0, 0.0], [0.0, 2.0], [0.0, 0.0]]])
    ids = torch.tensor([[0, 0, 1]])
    lp, ent = token_logprobs(logits, ids, temperature=2.0)
    assert lp[0, 0].item() == pytest.approx(math.log(math.exp(1) / (math.exp(1) + 1)))
    assert lp.shape == ent.shape == (1, 2)
