import math
import statistics

import pytest

from weft_train.rl.groups import (
    GroupFormationError,
    batch_advantages,
    form_groups,
    group_advantages,
)


def test_groups_are_contiguous_blocks_in_rollout_order() -> None:
    assert form_groups(list(range(6)), 3) == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(GroupFormationError, match="do not split"):
        form_groups(list(range(5)), 2)
    with pytest.raises(GroupFormationError, match="at least 2"):
        form_groups([1], 1)


def test_group_norm_uses_unbiased_std_and_openrlhf_epsilon() -> None:
    adv = group_advantages([1.0, 0.0, 1.0, 0.0], "group_norm")
    # torch's unbiased std of [1,0,1,0] is sqrt(1/3): advantages are +-0.866 (OpenRLHF probe).
    assert adv == pytest.approx([0.8660254, -0.8660254, 0.8660254, -0.8660254], abs=1e-6)
    rewards = [0.2, 0.9, 0.4]
    mean, std = statistics.mean(rewards), statistics.stdev(rewards)
    assert group_advantages(rewards) == pytest.approx([(r - mean) / (std + 1e-9) for r in rewards])


def test_dr_grpo_is_centering_only() -> None:
    assert group_advantages([1.0, 0.0, 0.0, 0.0], "dr_grpo") == pytest.approx(
        [0.75, -0.25, -0.25, -0.25]
    )


def test_constant_group_gives_zero_not_nan() -> None:
    assert all(a == 0.0 and not math.isnan(a) for a in group_advantages([1.0, 1.0, 1.0]))


def test_batch_advantages_never_mix_groups() -> None:
    adv = batch_advantages([1, 0, 1, 1], 2, "dr_grpo")
    assert adv == [0.5, -0.5, 0.0, 0.0]
    with pytest.raises(ValueError, match="unknown advantage estimator"):
        group_advantages([1, 0], "rloo")  # type: ignore[arg-type]
