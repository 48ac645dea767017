"""Token-exact training samples of atomic-turn (and trajectory-level) GRPO.

A `TurnSample` is one candidate segment as the trainer sees it: every id of the history plus the
segment (never retokenized), the model-generated spans, the rollout policy's logprobs on them,
one credit flag per span and the checkpoint reward. Pure data: no torch here, so the rollout side
(vLLM, MegaMCP) can build samples without importing a training stack.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from weft_train.rl.credit import CreditFlag


@dataclass(frozen=True)
class ActionSpan:
    """Model-generated tokens `token_ids[start:end]` of one assistant message."""

    start: int
    end: int
    flags: frozenset[CreditFlag] = frozenset()

    @property
    def flagged(self) -> bool:
        return bool(self.flags)


@dataclass
class TurnSample:
    """One candidate of one atomic-turn group (or one whole trajectory, trajectory-level GRPO).

    `token_ids` and `rollout_logprobs` have the same length L; logprobs are 0.0 outside the spans
    (OpenRLHF's convention, so the same lists feed its `_process_response_into_experience`).
    """

    task_id: str
    turn: int  # position of the atomic task in the stable topological order (-1: whole trajectory)
    candidate: int  # index g in the group, 0..G-1
    token_ids: list[int]  # [L]
    spans: list[ActionSpan]  # model-generated spans, in order
    rollout_logprobs: list[float]  # [L]
    reward: float  # binary checkpoint outcome (atomic turn) or mean checkpoint reward (trajectory)
    complete: bool = True  # ended by the policy, not cut by a length limit
    node_id: str = ""
    infrastructure_error: str | None = None  # set when a ledger entry shows an infra failure
    extra: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.rollout_logprobs) != len(self.token_ids):
            raise ValueError(
                f"sample {self.task_id}/turn {self.turn}/cand {self.candidate}: "
                f"{len(self.rollout_logprobs)} logprobs for {len(self.token_ids)} ids"
            )
        last = 0
        for s in self.spans:
            if not (last <= s.start < s.end <= len(self.token_ids)):
                raise ValueError(
                    f"sample {self.task_id}/turn {self.turn}/cand {self.candidate}: span "
                    f"[{s.start}, {s.end}) out of order or outside {len(self.token_ids)} ids"
                )
            last = s.end

    @property
    def action_ranges(self) -> list[tuple[int, int]]:
        return [(s.start, s.end) for s in self.spans]

    @property
    def action_tokens(self) -> int:
        return sum(s.end - s.start for s in self.spans)

    def action_mask(self) -> list[int]:
        """[L] 1 on model-generated tokens."""
        mask = [0] * len(self.token_ids)
        for s in self.spans:
            mask[s.start : s.end] = [1] * (s.end - s.start)
        return mask

    def credit_mask(self) -> list[int]:
        """[L] 1 on tokens of flagged spans (their positive advantage is removed)."""
        mask = [0] * len(self.token_ids)
        for s in self.spans:
            if s.flagged:
                mask[s.start : s.end] = [1] * (s.end - s.start)
        return mask
