"""Atomic-turn GRPO (paper §3.3.2, App. B.1): groups, advantages, credit masking, dynamic sampling,
the loss, the consistency filter, the rollout tree and the CPU trainer."""

from weft_train.rl.credit import AssistantMessage, CreditFlag, CreditRules, ParsedCall, flag_segment
from weft_train.rl.groups import batch_advantages, form_groups, group_advantages
from weft_train.rl.samples import ActionSpan, TurnSample
from weft_train.rl.sampling import GroupRejection, fill_batch, screen_group

__all__ = [
    "ActionSpan",
    "AssistantMessage",
    "CreditFlag",
    "CreditRules",
    "GroupRejection",
    "ParsedCall",
    "TurnSample",
    "batch_advantages",
    "fill_batch",
    "flag_segment",
    "form_groups",
    "group_advantages",
    "screen_group",
]
