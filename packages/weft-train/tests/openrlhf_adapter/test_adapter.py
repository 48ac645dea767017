"""The atomic-turn overrides inside OpenRLHF 0.11.2 on CPU (parity venv only): the launcher's
arguments through OpenRLHF's own parser, the agent file through its loader, bundles through the
samples generator and experience maker, and one training step on a tiny Qwen3 against Weft's loss."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from weft_train.openrlhf import bundle
from weft_train.rl.batch import collate
from weft_train.rl.credit import CreditFlag
from weft_train.rl.groups import batch_advantages
from weft_train.rl.loss import grpo_loss, token_logprobs
from weft_train.rl.samples import ActionSpan, TurnSample

from .test_launch import config

FLAG = frozenset({CreditFlag.NO_PROGRESS_REPEAT})
G = 2


@pytest.mark.parametrize("preset", ["tiny", "8b", "14b"])
def test_launch_arguments_pass_openrlhfs_parser_and_checks(tmp_path: Path, preset: str) -> None:
    from weft_train.openrlhf.launch import PRESETS, plan
    from weft_train.openrlhf.train import parse_openrlhf_args

    p = plan(config(tmp_path, **PRESETS[preset]))  # type: ignore[index]
    args = parse_openrlhf_args(p.argv)
    assert args.rollout.n_samples_per_prompt == p.config.group_size
    assert args.rollout.batch_size == p.config.tasks_per_step
    assert args.reward.remote_url == ["agent"]  # OpenRLHF's mark for an agent executor
    assert args.algo.advantage.is_correction_threshold == [0.5, 2.0]
    assert args.algo.kl.use_loss and args.algo.kl.estimator == "k3"
    assert args.algo.dynamic_filtering_enable and args.train.colocate_all
    # OpenRLHF's own checks run: 8 samples in micro-batches of 64 cannot feed one actor.
    bad = plan(
        config(tmp_path / "b", **PRESETS["tiny"], extra_args=["--rollout.micro_batch_size", "64"])
    )
    with pytest.raises(AssertionError, match="sample batches"):
        parse_openrlhf_args(bad.argv)


def test_agent_file_loads_through_openrlhfs_loader(tmp_path: Path) -> None:
    from openrlhf.trainer.ray.vllm_engine import _load_agent_executor
    from openrlhf.utils.agent import AgentExecutorBase

    from weft_train.openrlhf.launch import plan, write

    p = plan(config(tmp_path, group_size=4))
    write(p)
    executor = _load_agent_executor(str(tmp_path / "run" / "agent_func.py"))
    assert isinstance(executor, AgentExecutorBase)
    assert executor.config.group_size == 4 and executor.config.megamcp_url == "http://10.0.0.2:7000"


def sample(task: str, turn: int, g: int, reward: float, **kw: Any) -> TurnSample:
    n = 10 + 3 * turn + g
    ids = [(7 * i + g) % 50 + 1 for i in range(n)]
    spans = [ActionSpan(4, 6, kw.pop("flags", frozenset())), ActionSpan(7, n)]
    lps = [0.0] * n
    for s in spans:
        lps[s.start : s.end] = [-0.3 - 0.1 * j for j in range(s.end - s.start)]
    return TurnSample(task, turn, g, ids, spans, lps, reward, **kw)


def plans() -> dict[str, list[list[TurnSample]]]:
    return {
        # turn 0 trains (candidate 0 passed but was flagged); turn 1 is constant
        "a": [
            [sample("a", 0, 0, 1.0, flags=FLAG), sample("a", 0, 1, 0.0)],
            [sample("a", 1, 0, 0.0), sample("a", 1, 1, 0.0)],
        ],
        "b": [[sample("b", 0, 0, 1.0), sample("b", 0, 1, 0.0, complete=False)]],
        "c": [
            [sample("c", 0, 0, 1.0), sample("c", 0, 1, 0.0, infrastructure_error="crm#3 timeout")]
        ],
        "d": [[sample("d", 0, 0, 0.0), sample("d", 0, 1, 1.0)]],
    }


def generator(dynamic: bool) -> Any:
    """The adapter's generator with Ray's dispatch replaced by the bundles the executor returns."""
    from weft_train.openrlhf.trainer import AtomicSamplesGenerator

    class Served(AtomicSamplesGenerator):  # type: ignore[misc]
        def __init__(self) -> None:
            self.args = SimpleNamespace(rollout=SimpleNamespace(n_samples_per_prompt=G))
            self.dispatched: list[str] = []

        def _dispatch_prompts_to_vllm(self, prompts, labels, *, images=None, **kw):  # type: ignore[no-untyped-def]
            self.dispatched += labels
            return [[bundle(plans()[label], f"p-{label}", label)] for label in labels]

        def _wait(self, pending):  # type: ignore[no-untyped-def]
            return pending[:1], pending[1:]

        def _fetch(self, ref):  # type: ignore[no-untyped-def]
            return ref

    gen = Served()
    it = iter([(["d"], [f"p-{t}"], [t], [None]) for t in "abcd"])
    exps, consumed, _ = gen._generate_vllm(it, num_prompts=2, dynamic_filtering=dynamic, max_len=64)
    return gen, exps, consumed


def test_generator_unpacks_bundles_screens_groups_and_replenishes() -> None:
    gen, exps, consumed = generator(dynamic=True)
    assert gen.dispatched == ["a", "b", "c", "d"] and consumed == 4
    assert [(e.labels[0], e.info["reward"].item()) for e in exps] == [
        ("a", 1.0), ("a", 0.0), ("d", 0.0), ("d", 1.0)
    ]  # fmt: skip
    assert dict(gen.rejected) == {"constant_reward": 1, "incomplete": 1, "infrastructure": 1}
    # without dynamic sampling only the infrastructure rule applies, and nothing is replaced
    gen, exps, consumed = generator(dynamic=False)
    assert gen.dispatched == ["a", "b"] and len(exps) == 3 * G


def test_experience_maker_advantages_equal_weft_with_the_credit_mask() -> None:
    from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
    from openrlhf.trainer.ppo_utils.kl_controller import FixedKLController

    from weft_train.openrlhf.trainer import AtomicExperienceMaker

    def advantages(cls: type) -> list[torch.Tensor]:
        _, exps, _ = generator(dynamic=True)
        args = SimpleNamespace(
            rollout=SimpleNamespace(n_samples_per_prompt=G),
            algo=SimpleNamespace(
                advantage=SimpleNamespace(estimator="group_norm", gamma=1.0, lambd=1.0),
                kl=SimpleNamespace(use_loss=True),
            ),
            reward=SimpleNamespace(
                clip_range=None, overlong_buffer_len=None, stop_properly_penalty_coef=None
            ),
        )
        maker = object.__new__(cls)
        maker.strategy, maker.kl_ctl, maker.advantage_estimator = (
            SimpleNamespace(args=args), FixedKLController(0.0), "group_norm"
        )  # fmt: skip
        for i, e in enumerate(exps):
            e.index, e.kl = [i], torch.zeros(e.action_mask.shape)
        return [e.advantages[0] for e in maker.compute_advantages_and_returns(exps)]

    plan = plans()
    samples = plan["a"][0] + plan["d"][0]
    weft = collate(samples, batch_advantages([s.reward for s in samples], G), pad_id=0)
    ours = advantages(AtomicExperienceMaker)
    for i, (s, adv) in enumerate(zip(samples, ours, strict=True)):
        n = len(s.token_ids) - 1
        on = weft.action_mask[i, :n].bool()  # OpenRLHF's returns also run over non-action tokens
        assert torch.allclose(adv[on], weft.advantages[i, :n][on], atol=1e-6), (i, adv)
    assert ours[0][3:5].tolist() == [0.0, 0.0]  # flagged + positive advantage: credit removed
    assert ours[0][6:].min() > 0  # its unflagged message keeps it
    stock = advantages(RemoteExperienceMaker)
    assert stock[0][3:5].min() > 0  # the rule the override adds


def tiny_model() -> Any:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen3Config(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, tie_word_embeddings=True,
    )  # fmt: skip
    return Qwen3ForCausalLM(cfg).float()


def test_training_step_masks_kl_with_tis_and_equals_weft_loss() -> None:
    from openrlhf.models import Actor, PolicyLoss
    from openrlhf.trainer.ppo_utils.experience import Experience
    from openrlhf.trainer.ray.ppo_actor import ActorPPOTrainer

    from weft_train.openrlhf.trainer import AtomicActorPPOTrainer

    model = tiny_model()
    b, t, kl_coef, clip = 3, 14, 0.5, (0.2, 0.28)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 64, (b, t), generator=g)
    mask = torch.zeros(b, t - 1)
    mask[:, 5:] = 1
    mask[1, 9:11] = 0  # an observation inside the trajectory
    with torch.no_grad():
        now, _ = token_logprobs(model(input_ids=ids).logits, ids)
    old = (now + torch.randn(b, t - 1, generator=g) * 0.05) * mask
    rollout = (old + torch.randn(b, t - 1, generator=g) * 0.6) * mask  # some ratios leave [0.5, 2]
    ref = (old + torch.randn(b, t - 1, generator=g) * 0.3) * mask
    adv = torch.tensor([[1.0], [-0.5], [0.7]]) * mask
    n_tokens = float(mask.sum())

    def openrlhf_grads(cls: type) -> list[torch.Tensor]:
        args = SimpleNamespace(
            algo=SimpleNamespace(
                advantage=SimpleNamespace(
                    is_correction_level="token", is_correction_mode="mask",
                    is_correction_gating="ratio", is_correction_threshold=[0.5, 2.0],
                ),
                kl=SimpleNamespace(use_loss=True, init_coef=kl_coef, estimator="k3", unbiased_gradient=False),
            ),
            actor=SimpleNamespace(entropy_coef=None),
            train=SimpleNamespace(dynamic_batch_enable=False),
        )  # fmt: skip
        trainer = object.__new__(cls)
        actor = Actor(model)
        actor.packing_samples = False  # set by Actor only when it loads a path itself
        trainer.args, trainer.actor, trainer.aux_loss, trainer.ema_model = args, actor, False, None
        trainer.actor_loss_fn = PolicyLoss(
            clip[0], clip[1], is_correction_level="token", is_correction_mode="mask",
            is_correction_gating="ratio", is_correction_threshold=[0.5, 2.0],
        )  # fmt: skip
        trainer.strategy = SimpleNamespace(
            ring_attn_group=None,
            backward=lambda loss, *_: loss.backward(),
            optimizer_step=lambda *_, **__: None,
            get_grad_norm=lambda *_: 0.0,
        )
        trainer.actor_scheduler = SimpleNamespace(get_last_lr=lambda: [0.0])
        trainer.actor_optim = None
        exp = Experience(
            sequences=ids, attention_mask=torch.ones_like(ids), action_mask=mask.bool(),
            action_log_probs=old, base_action_log_probs=ref, rollout_log_probs=rollout,
            advantages=adv, info={},
        )  # fmt: skip
        model.zero_grad()
        info = {"dp_size": 1, "batch_num_tokens": torch.tensor(n_tokens), "global_batch_size": b}
        trainer.training_step(exp, kl_coef, 0, info)
        assert exp.action_mask.equal(mask.bool())  # restored for the next epoch
        return [p.grad.clone() for p in model.parameters()]

    model.zero_grad()
    lp, _ = token_logprobs(model(input_ids=ids).logits, ids)
    parts = grpo_loss(
        lp, old, adv, mask, rollout_logprobs=rollout, ref_logprobs=ref, kl_coef=kl_coef,
        clip_low=clip[0], clip_high=clip[1], num_tokens=n_tokens,
    )  # fmt: skip
    assert 0 < parts.tis_masked_share < 0.5  # the band masks some tokens here
    parts.loss.backward()
    weft = [p.grad.clone() for p in model.parameters()]

    ours = openrlhf_grads(AtomicActorPPOTrainer)
    for w, o in zip(weft, ours, strict=True):
        assert torch.allclose(w, o, atol=1e-6, rtol=1e-4)
    stock = openrlhf_grads(ActorPPOTrainer)  # KL over every valid token
    assert not all(
        torch.allclose(w, s, atol=1e-6, rtol=1e-4) for w, s in zip(weft, stock, strict=True)
    )
