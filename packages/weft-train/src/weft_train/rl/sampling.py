"""Dynamic sampling and physical retries (paper App. B.1).

A group whose candidates all got the same reward carries no group-relative signal, and a group with
an incomplete (truncated) candidate would train on an unfinished decision: both are discarded and
new groups are sampled until the batch is full. Infrastructure failures (the ledger's crash,
timeout and infrastructure error kinds, or a transport exception) are retried physically and are
never scored as a low reward; a group that still cannot run is dropped, not counted as a failure.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, TypeVar

from weft_core.models import LedgerEntry
from weft_train.rl.samples import TurnSample

T = TypeVar("T")
TaskT = TypeVar("TaskT")


class GroupRejection(StrEnum):
    CONSTANT_REWARD = "constant_reward"
    INCOMPLETE = "incomplete"
    INFRASTRUCTURE = "infrastructure"


class InfrastructureFailure(Exception):
    """A rollout step failed for a reason outside the policy (retried physically)."""


def infrastructure_failure(entries: Iterable[LedgerEntry]) -> str | None:
    """What in the ledger was the infrastructure's fault (crash, timeout, host error), or None."""
    bad = [e for e in entries if e.error_kind is not None and e.error_kind.is_infrastructure]
    if not bad:
        return None
    return ", ".join(f"{e.mcp}#{e.seq} {e.tool}: {e.error_kind}" for e in bad)


def group_rejection(
    rewards: Sequence[float], complete: Sequence[bool], infrastructure: Sequence[bool]
) -> GroupRejection | None:
    """The dynamic-sampling rule on one group's per-candidate facts (None: it can train). One rule
    for every trainer: the CPU sampler screens `TurnSample`s, the OpenRLHF adapter bundle dicts."""
    if any(infrastructure):
        return GroupRejection.INFRASTRUCTURE
    if not all(complete):
        return GroupRejection.INCOMPLETE
    if len(set(rewards)) <= 1:
        return GroupRejection.CONSTANT_REWARD
    return None


def screen_group(group: Sequence[TurnSample]) -> GroupRejection | None:
    """Why a group cannot train (None: it can)."""
    return group_rejection(
        [s.reward for s in group],
        [s.complete for s in group],
        [bool(s.infrastructure_error) for s in group],
    )


async def with_physical_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    is_infrastructure: Callable[[BaseException], bool],
    max_retries: int,
    backoff_s: float = 0.0,
) -> tuple[T, int]:
    """Run `attempt` again after infrastructure failures (up to `max_retries` times); other
    exceptions propagate at once. Returns the result and how many retries it took."""
    retries = 0
    while True:
        try:
            return await attempt(), retries
        except Exception as exc:
            if not is_infrastructure(exc) or retries >= max_retries:
                raise
            retries += 1
            if backoff_s:
                await asyncio.sleep(backoff_s * retries)


@dataclass
class SamplingStats:
    tasks_drawn: int = 0
    groups_seen: int = 0
    groups_accepted: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    failed_tasks: list[str] = field(default_factory=list)  # task ids whose rollout raised


@dataclass
class FilledBatch(Generic[TaskT]):
    groups: list[list[TurnSample]]
    stats: SamplingStats
    exhausted: bool = False  # the task source ran out before the batch was full


async def fill_batch(
    tasks: Iterable[TaskT],
    rollout: Callable[[TaskT], Awaitable[list[list[TurnSample]]]],
    want_groups: int,
    *,
    task_id: Callable[[TaskT], str] = str,
    concurrency: int = 1,
    max_tasks: int | None = None,
) -> FilledBatch[TaskT]:
    """Draw tasks and roll them out until `want_groups` trainable groups are collected.

    `rollout(task)` returns the task's groups (one per atomic turn, or one trajectory group). It
    is expected to have retried infrastructure failures already; if it still raises, the task is
    recorded in `stats.failed_tasks` and the next task is drawn (no reward is invented for it).
    Groups come out contiguous and in rollout order; the last task's surplus groups are kept so
    the batch holds whole tasks' worth of turns. Up to `concurrency` tasks roll out at once. With
    `max_tasks`, drawing stops after that many tasks even if the batch is short (`exhausted`),
    so a policy whose groups are all constant cannot keep the sampler busy forever.
    """
    stats = SamplingStats()
    accepted: list[list[TurnSample]] = []
    source = iter(tasks)

    async def one(task: TaskT) -> list[list[TurnSample]] | None:
        try:
            return await rollout(task)
        except Exception as exc:
            stats.failed_tasks.append(f"{task_id(task)}: {type(exc).__name__}: {exc}")
            return None

    while len(accepted) < want_groups:
        need = max(1, min(concurrency, want_groups - len(accepted)))
        if max_tasks is not None:
            need = min(need, max_tasks - stats.tasks_drawn)
            if need <= 0:
                return FilledBatch(accepted, stats, exhausted=True)
        chunk = [t for t in (next(source, None) for _ in range(need)) if t is not None]
        if not chunk:
            return FilledBatch(accepted, stats, exhausted=True)
        stats.tasks_drawn += len(chunk)
        for groups in await asyncio.gather(*(one(t) for t in chunk)):
            for group in groups or []:
                stats.groups_seen += 1
                why = screen_group(group)
                if why is None:
                    accepted.append(group)
                    stats.groups_accepted += 1
                else:
                    stats.rejected[why.value] += 1
    return FilledBatch(accepted, stats)
