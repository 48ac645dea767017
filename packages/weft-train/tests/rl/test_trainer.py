import copy

import pytest
import torch

from weft_train.policy import build_model
from weft_train.rl.credit import CreditFlag
from weft_train.rl.groups import group_advantages
from weft_train.rl.loss import token_logprobs
from weft_train.rl.samples import ActionSpan, TurnSample
from weft_train.rl.trainer import GRPOSettings, GRPOTrainer

VOCAB = 40
FLAG = frozenset({CreditFlag.EXCESSIVE_REPETITION})


def sample(action: list[int], reward: float, *, flagged: bool = False, cand: int = 0) -> TurnSample:
    prompt = [1, 2, 3, 4]
    ids = prompt + action
    return TurnSample(
        "t",
        0,
        cand,
        ids,
        [ActionSpan(len(prompt), len(ids), FLAG if flagged else frozenset())],
        [0.0] * len(prompt) + [-3.0] * len(action),
        reward,
    )


def action_logprob(model: torch.nn.Module, s: TurnSample) -> float:
    ids = torch.tensor([s.token_ids])
    with torch.no_grad():
        lp, _ = token_logprobs(model(input_ids=ids).logits, ids)
    return float(lp[0, s.spans[0].start - 1 :].sum())


def trainer(seed: int = 0, **kw: object) -> GRPOTrainer:
    model = build_model(VOCAB, seed=seed)
    options: dict[str, object] = {"lr": 3e-2, "kl_coef": 0.0, "tis_band": None, **kw}
    settings = GRPOSettings(**options)  # type: ignore[arg-type]
    return GRPOTrainer(model, copy.deepcopy(model), settings, pad_id=0)


def test_step_moves_probability_toward_the_rewarded_candidate() -> None:
    t = trainer()
    good, bad = sample([7, 8, 9], 1.0), sample([20, 21, 22], 0.0, cand=1)
    before = action_logprob(t.policy, good) - action_logprob(t.policy, bad)
    for _ in range(3):
        stats = t.step([[good, bad]])
    after = action_logprob(t.policy, good) - action_logprob(t.policy, bad)
    assert after > before + 0.5
    assert stats.samples == 2 and stats.action_tokens == 6 and stats.entropy > 0


def test_credit_mask_removes_positive_credit_of_a_flagged_message() -> None:
    group = [sample([7, 8, 9], 1.0, flagged=True), sample([20, 21, 22], 0.0, cand=1)]
    masked, unmasked = trainer(), trainer(credit_masking=False)
    base = action_logprob(masked.policy, group[0])
    masked.step([group])
    unmasked.step([group])
    gain_masked = action_logprob(masked.policy, group[0]) - base
    gain_unmasked = action_logprob(unmasked.policy, group[0]) - base
    assert gain_unmasked > 0.1
    assert gain_masked < gain_unmasked / 2  # only the negative sample moved the policy
    # the reward itself is untouched
    assert group[0].reward == 1.0


def test_kl_is_a_loss_never_a_reward() -> None:
    group = [sample([7, 8, 9], 1.0), sample([20, 21, 22], 0.0, cand=1)]
    near = trainer(kl_coef=0.5)
    far = trainer(kl_coef=0.5)
    far.reference = build_model(VOCAB, seed=99)  # a very different reference
    assert near.advantages([group]) == far.advantages([group]) == group_advantages([1.0, 0.0])
    s_far = far.step([group])
    s_near = near.step([group])
    assert s_far.kl > s_near.kl >= 0.0
    assert s_far.sample_reward == s_near.sample_reward == 0.5


def test_tis_masked_tokens_are_reported() -> None:
    t = trainer(tis_band=(0.5, 2.0))
    group = [sample([7, 8, 9], 1.0), sample([20, 21, 22], 0.0, cand=1)]
    for s in group:  # the rollout engine agrees with the trainer...
        ids = torch.tensor([s.token_ids])
        with torch.no_grad():
            lp, _ = token_logprobs(t.policy(input_ids=ids).logits, ids)
        s.rollout_logprobs[4:] = lp[0, 3:].tolist()
    group[0].rollout_logprobs[-1] = 0.0  # ...except on one token it found far more likely
    stats = t.step([group])
    assert stats.tis_masked == pytest.approx(1 / 6)
