"""The rollout runner (paper §3.1.3): concurrent rollouts in MegaMCP session groups, checkpoint
outcomes per atomic-task turn, traces tied to the ledger, physical retries of infrastructure
failures, JSONL results."""

from weft_megamcp.service import GroupService
from weft_tasks.rollout.infra import is_infrastructure_error
from weft_tasks.rollout.ledger_match import match_ledger, trace_ledger_problems
from weft_tasks.rollout.plan import RolloutPlan, plan_rollouts, rollout_id
from weft_tasks.rollout.runner import (
    RolloutReport,
    run_rollout,
    run_rollouts,
)
from weft_tasks.rollout.settings import RolloutSettings
from weft_tasks.rollout.sink import TraceSink
from weft_tasks.rollout.stats import REFERENCE, CellStats, policy_label, rollout_stats

__all__ = [
    "REFERENCE",
    "CellStats",
    "GroupService",
    "RolloutPlan",
    "RolloutReport",
    "RolloutSettings",
    "TraceSink",
    "is_infrastructure_error",
    "match_ledger",
    "plan_rollouts",
    "policy_label",
    "rollout_id",
    "rollout_stats",
    "run_rollout",
    "run_rollouts",
    "trace_ledger_problems",
]
