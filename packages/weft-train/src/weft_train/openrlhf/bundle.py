"""Atomic-turn bundles in OpenRLHF's agent-response format.

OpenRLHF turns one `AgentExecutor.execute()` dict into one Experience, but one atomic-turn task
yields T x G samples with T different prefixes. So `execute()` returns a bundle: the standard keys
of its first candidate (so a stock OpenRLHF still sees a valid response) plus `atomic_groups`,
T lists of G candidate dicts, each itself a standard response (`observation_tokens`,
`action_ranges`, `rollout_log_probs` 0.0 off-action, `reward`, `scores`, `truncated`, `prompt`,
`label`, `extra_logs`) with `credit_mask` (1 on tokens of flagged messages) and
`infrastructure_error` (why the candidate hit an infrastructure failure, or None). The adapter's
samples generator (`trainer.AtomicSamplesGenerator`) unpacks the groups contiguously, so
`reshape(-1, G)` groups them correctly, and drops groups by `screen` (the CPU trainer's rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from weft_train.rl.samples import TurnSample
from weft_train.rl.sampling import GroupRejection, group_rejection

ATOMIC_GROUPS = "atomic_groups"
CREDIT_MASK = "credit_mask"
INFRASTRUCTURE_ERROR = "infrastructure_error"


def candidate(sample: TurnSample, prompt: str, label: str) -> dict[str, Any]:
    flagged = sum(1 for s in sample.spans if s.flagged)
    return {
        "observation_tokens": list(sample.token_ids),
        "action_ranges": sample.action_ranges,
        "rollout_log_probs": list(sample.rollout_logprobs),
        "prompt": prompt,
        "label": label,
        "reward": float(sample.reward),
        "scores": float(sample.reward),
        "truncated": not sample.complete,
        # every sample must carry the same extra_logs keys or OpenRLHF's info merge fails
        "extra_logs": {"turn": float(sample.turn), "flagged_messages": float(flagged)},
        CREDIT_MASK: sample.credit_mask(),
        INFRASTRUCTURE_ERROR: sample.infrastructure_error,
    }


def bundle(groups: Sequence[Sequence[TurnSample]], prompt: str, label: str) -> dict[str, Any]:
    if not groups or not groups[0]:
        raise ValueError("a bundle needs at least one group with one candidate")
    cands = [[candidate(s, prompt, label) for s in g] for g in groups]
    return {**cands[0][0], ATOMIC_GROUPS: cands}


def unbundle(response: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The groups of a bundle; a plain response is one group of one."""
    return list(response.get(ATOMIC_GROUPS) or [[response]])


def credit_flags(cand: dict[str, Any], max_len: int) -> list[int]:
    """The credit mask sliced like OpenRLHF slices `action_mask`: `[1:max_len]`."""
    return list(cand[CREDIT_MASK][1:max_len])


def screen(group: Sequence[dict[str, Any]]) -> GroupRejection | None:
    """Why a group of candidate dicts cannot train (None: it can); the rule of `screen_group`."""
    return group_rejection(
        [float(c["reward"]) for c in group],
        [not c.get("truncated", False) for c in group],
        [bool(c.get(INFRASTRUCTURE_ERROR)) for c in group],
    )
