"""Groups and group-relative advantages, exactly as OpenRLHF 0.11.2 forms and computes them.

OpenRLHF reshapes the rollout-ordered rewards to `(-1, n_samples_per_prompt)`: a group is a
contiguous block of G samples. `group_norm` is `(r - mean) / (std + 1e-9)` with the unbiased
(n - 1) standard deviation torch uses; `dr_grpo` is `r - mean`. Every action token of a sample
gets its sample's advantage (gamma = 1, reward on the last action token).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, TypeVar

Estimator = Literal["group_norm", "dr_grpo"]
GROUP_NORM_EPS = 1e-9

T = TypeVar("T")


class GroupFormationError(ValueError):
    """Samples cannot be cut into contiguous groups of G."""


def form_groups(samples: Sequence[T], group_size: int) -> list[list[T]]:
    """Contiguous blocks of `group_size`, in rollout order (OpenRLHF's `reshape(-1, n)`)."""
    if group_size < 2:
        raise GroupFormationError(f"group size must be at least 2 (got {group_size})")
    if len(samples) % group_size:
        raise GroupFormationError(
            f"{len(samples)} samples do not split into groups of {group_size}"
        )
    return [list(samples[i : i + group_size]) for i in range(0, len(samples), group_size)]


def group_advantages(rewards: Sequence[float], estimator: Estimator = "group_norm") -> list[float]:
    """Advantages of one group of rewards."""
    n = len(rewards)
    if n < 2:
        raise GroupFormationError(f"a group needs at least 2 rewards (got {n})")
    mean = sum(rewards) / n
    if estimator == "dr_grpo":
        return [r - mean for r in rewards]
    if estimator == "group_norm":
        std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (n - 1))
        return [(r - mean) / (std + GROUP_NORM_EPS) for r in rewards]
    raise ValueError(f"unknown advantage estimator {estimator!r} (group_norm or dr_grpo)")


def batch_advantages(
    rewards: Sequence[float], group_size: int, estimator: Estimator = "group_norm"
) -> list[float]:
    """Advantages of a rollout-ordered batch of contiguous groups."""
    out: list[float] = []
    for group in form_groups(list(rewards), group_size):
        out.extend(group_advantages(group, estimator))
    return out
