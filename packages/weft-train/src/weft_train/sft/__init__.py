"""SFT data: prefix-preserving rejection sampling, JSONL export, loss masks and a CPU trainer."""

from weft_train.sft.sampling import (
    SampledTrajectory,
    SamplingConfig,
    SamplingService,
    sample_trajectories,
    sample_trajectory,
)

__all__ = [
    "SampledTrajectory",
    "SamplingConfig",
    "SamplingService",
    "sample_trajectories",
    "sample_trajectory",
]
