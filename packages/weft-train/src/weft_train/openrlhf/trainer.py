"""Atomic-turn GRPO inside OpenRLHF 0.11.2: the trainer overrides (imports openrlhf).

Each class subclasses the OpenRLHF class that owns one step and overrides only that step:

- `AtomicSamplesGenerator._generate_vllm` (rollout controller): each task is dispatched once
  (`num_samples=1`: the executor returns the bundle of every turn's G candidates), the bundle is
  unpacked into contiguous groups of G experiences in turn order, groups are dropped by Weft's
  dynamic-sampling rule (`bundle.screen`: infrastructure failure always; constant reward or a
  truncated candidate when `--algo.dynamic_filtering_enable`), and replacement tasks are
  dispatched until `num_prompts` groups are in. OpenRLHF's `reshape(-1, G)` then groups exactly the
  candidates of one turn. Each experience carries its credit mask in `info` (OpenRLHF pads and
  concatenates it like `action_mask`).
- `AtomicExperienceMaker.compute_advantages_and_returns`: the stock group advantages, then
  `min(A, 0)` on the tokens of flagged messages; rewards, returns and KL are untouched.
- `AtomicActorPPOTrainer.training_step`: tokens the token-level TIS mask drops (ratio
  pi_old/pi_rollout outside the band) are taken out of `action_mask` before the stock step, so
  they leave the k3 KL term as they already leave the policy loss, while the loss denominator,
  computed from the original mask before the step, stays the original valid-token count.

`install()` makes OpenRLHF's CLI build these (its `PPOTrainer` and `PolicyModelActor`);
`weft_train.openrlhf.train` calls it and then runs `openrlhf.cli.train_ppo_ray`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import ray  # type: ignore[import-not-found,unused-ignore]
import torch
from openrlhf.trainer import ppo_trainer as _ppo_trainer  # type: ignore[import-not-found]
from openrlhf.trainer.ppo_utils.experience import Experience  # type: ignore[import-not-found]
from openrlhf.trainer.ppo_utils.experience_maker import (  # type: ignore[import-not-found]
    RemoteExperienceMaker,
)
from openrlhf.trainer.ppo_utils.samples_generator import (  # type: ignore[import-not-found]
    SamplesGenerator,
    _collect_prompt_batch,
)
from openrlhf.trainer.ray import ppo_actor as _ppo_actor  # type: ignore[import-not-found]
from openrlhf.utils.loss_utils import get_loss_batch_info  # type: ignore[import-not-found]

from weft_train.errors import TrainUserError
from weft_train.openrlhf.bundle import CREDIT_MASK, screen, unbundle
from weft_train.rl.batch import apply_credit_mask
from weft_train.rl.loss import tis_weights
from weft_train.rl.sampling import GroupRejection


def _actor_class(remote: Any) -> Any:
    """The plain class behind a `@ray.remote` class (Ray forbids subclassing the wrapper)."""
    return remote.__ray_metadata__.modified_class.__ray_actor_class__


class AtomicSamplesGenerator(SamplesGenerator):  # type: ignore[misc]
    rejected: Counter[str]

    def _dispatch_prompts_to_vllm(
        self, prompts: list[str], labels: list[str], *, images: Any = None, **generate_kwargs: Any
    ) -> list[Any]:
        # one executor call per task: its bundle already holds the G candidates of every turn
        kwargs = {**generate_kwargs, "n_samples_per_prompt": 1}
        refs: list[Any] = super()._dispatch_prompts_to_vllm(
            prompts, labels, images=images, **kwargs
        )
        return refs

    def _wait(self, pending: list[Any]) -> tuple[list[Any], list[Any]]:
        ready, rest = ray.wait(pending, num_returns=1, timeout=10.0)
        return list(ready), list(rest)

    def _fetch(self, ref: Any) -> list[dict[str, Any]]:
        return list(ray.get(ref))

    def experiences_of(
        self, responses: list[dict[str, Any]], dynamic_filtering: bool, **generate_kwargs: Any
    ) -> list[list[Experience]]:
        """The trainable groups of one task's responses, each G experiences in candidate order."""
        g = int(self.args.rollout.n_samples_per_prompt)
        max_len = int(generate_kwargs.get("max_len", 2048))
        kept: list[list[Experience]] = []
        for response in responses:
            for group in unbundle(response):
                if len(group) != g:
                    raise TrainUserError(
                        f"task {response.get('label')!r}: a group of {len(group)} candidates, "
                        f"but --rollout.n_samples_per_prompt is {g} (set it to the group size)"
                    )
                why = screen(group)
                if why is not None and (dynamic_filtering or why is GroupRejection.INFRASTRUCTURE):
                    self.rejected[why.value] += 1
                    continue
                exps = []
                for cand in group:
                    exp = self._process_response_into_experience(cand, **generate_kwargs)
                    flags = cand.get(CREDIT_MASK) or [0] * len(cand["observation_tokens"])
                    exp.info[CREDIT_MASK] = torch.tensor(flags[1:max_len], dtype=torch.float32)[
                        None
                    ]
                    exps.append(exp)
                kept.append(exps)
        return kept

    def _generate_vllm(
        self,
        dataloader_iter: Any,
        num_prompts: int,
        dynamic_filtering: bool,
        **generate_kwargs: Any,
    ) -> tuple[list[Experience], int, bool]:
        """Roll out tasks until `num_prompts` trainable groups are in (or the prompts run out):
        one batch of `num_prompts` tasks first, then one replacement task per missing group
        while fewer groups are in (or on the way) than wanted."""
        if not hasattr(self, "rejected"):
            self.rejected = Counter()
        prompts, labels, images, exhausted = _collect_prompt_batch(dataloader_iter, num_prompts)
        if not prompts:
            return [], 0, True
        consumed = len(prompts)
        pending = self._dispatch_prompts_to_vllm(prompts, labels, images=images, **generate_kwargs)
        groups: list[list[Experience]] = []
        while pending:
            ready, pending = self._wait(pending)
            for ref in ready:
                groups += self.experiences_of(
                    self._fetch(ref), dynamic_filtering, **generate_kwargs
                )
            missing = num_prompts - len(groups) - len(pending)
            if dynamic_filtering and missing > 0 and not exhausted:
                more, more_labels, more_images, exhausted = _collect_prompt_batch(
                    dataloader_iter, missing
                )
                consumed += len(more)
                if more:
                    pending += self._dispatch_prompts_to_vllm(
                        more, more_labels, images=more_images, **generate_kwargs
                    )
        return [e for group in groups for e in group], consumed, exhausted


class AtomicExperienceMaker(RemoteExperienceMaker):  # type: ignore[misc]
    @torch.no_grad()
    def compute_advantages_and_returns(self, experiences: list[Experience]) -> list[Experience]:
        flags = [e.info.pop(CREDIT_MASK, None) for e in experiences]
        out: list[Experience] = super().compute_advantages_and_returns(experiences)
        for exp, flag in zip(out, flags, strict=True):
            if flag is not None:
                exp.advantages = apply_credit_mask(exp.advantages, flag.to(exp.advantages.device))
        return out


def tis_keep_mask(
    old_logprobs: torch.Tensor,  # [B, A]
    rollout_logprobs: torch.Tensor,  # [B, A]
    action_mask: torch.Tensor,  # [B, A]
    band: tuple[float, float],
) -> torch.Tensor:
    """[B, A] bool: valid tokens the token-level TIS mask keeps (Weft's `tis_weights`)."""
    keep, _ = tis_weights(old_logprobs.float(), rollout_logprobs.float(), band)
    return keep & action_mask.bool()


class AtomicActorPPOTrainer(_ppo_actor.ActorPPOTrainer):  # type: ignore[misc]
    def training_step(
        self,
        experience: Experience,
        kl_ctl: float,
        step: int,
        loss_batch_info: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        adv = self.args.algo.advantage
        if adv.is_correction_level == "off" or experience.rollout_log_probs is None:
            out: dict[str, Any] = super().training_step(experience, kl_ctl, step, loss_batch_info)
            return out
        if (adv.is_correction_level, adv.is_correction_mode, adv.is_correction_gating) != (
            "token",
            "mask",
            "ratio",
        ):
            raise TrainUserError(
                "atomic-turn GRPO masks KL with token-level TIS: use --algo.advantage."
                "is_correction_level token --algo.advantage.is_correction_mode mask "
                "--algo.advantage.is_correction_gating ratio"
            )
        mask = experience.action_mask
        if loss_batch_info is None:  # the denominator from the original mask, before TIS
            loss_batch_info = get_loss_batch_info(
                self.strategy,
                mask,
                replay_buffer=self.replay_buffer,
                step=step,
                dynamic_batch=self.args.train.dynamic_batch_enable,
            )
        low, high = (float(x) for x in adv.is_correction_threshold)
        keep = tis_keep_mask(
            experience.action_log_probs, experience.rollout_log_probs, mask, (low, high)
        )
        dropped = (mask.bool() & ~keep).float().sum(-1)
        experience.info["tis_masked_share"] = dropped / mask.float().sum(-1).clamp(min=1)
        experience.action_mask = keep.to(mask.dtype)
        try:
            out = super().training_step(experience, kl_ctl, step, loss_batch_info)
        finally:
            experience.action_mask = mask
        return out


_PolicyModelActor = _actor_class(_ppo_actor.PolicyModelActor)
_PPOTrainer = _actor_class(_ppo_trainer.PPOTrainer)


class AtomicPolicyModelActor(_PolicyModelActor):  # type: ignore[misc,valid-type]
    def init_model_from_pretrained(self, *args: Any, **kwargs: Any) -> Any:
        out = super().init_model_from_pretrained(*args, **kwargs)
        # The stock trainer with one method overridden and no state added: re-classing the built
        # instance keeps the rest of OpenRLHF's setup (DeepSpeed engine, vLLM sync group) as is.
        self.trainer.__class__ = AtomicActorPPOTrainer
        return out


class AtomicPPOTrainer(_PPOTrainer):  # type: ignore[misc,valid-type]
    def __init__(
        self,
        pretrain: str,
        strategy: Any,
        actor_model_group: Any,
        critic_model_group: Any,
        reward_model_group: Any,
        reference_model_group: Any,
        vllm_engines: Any,
        **generate_kwargs: Any,
    ) -> None:
        if strategy.args.train.async_enable:
            raise TrainUserError(
                "atomic-turn GRPO runs the synchronous trainer: drop --train.async_enable"
            )
        super().__init__(
            pretrain,
            strategy,
            actor_model_group,
            critic_model_group,
            reward_model_group,
            reference_model_group,
            vllm_engines,
            **generate_kwargs,
        )
        self.samples_generator = AtomicSamplesGenerator(
            strategy=strategy,
            prompts_dataloader=self.prompts_dataloader,
            eval_dataloader=self.eval_dataloader,
            tokenizer=self.tokenizer,
            vllm_engines=vllm_engines,
        )
        self.experience_maker = AtomicExperienceMaker(
            actor_model_group,
            critic_model_group,
            reward_model_group,
            reference_model_group,
            self.kl_ctl,
            strategy,
            self.tokenizer,
        )


def install() -> None:
    """Make `openrlhf.cli.train_ppo_ray` build the atomic-turn classes: it reads `PPOTrainer` and
    `PolicyModelActor` from these modules when it runs, with the stock Ray options."""
    _ppo_trainer.PPOTrainer = ray.remote(AtomicPPOTrainer)
    _ppo_actor.PolicyModelActor = ray.remote(num_gpus=1)(AtomicPolicyModelActor)
