import pytest

from weft_core.models import ErrorKind, LedgerEntry
from weft_train.rl.samples import ActionSpan, TurnSample
from weft_train.rl.sampling import (
    GroupRejection,
    fill_batch,
    infrastructure_failure,
    screen_group,
    with_physical_retries,
)


def sample(
    reward: float, *, complete: bool = True, infra: str | None = None, task: str = "t"
) -> TurnSample:
    return TurnSample(
        task_id=task,
        turn=0,
        candidate=0,
        token_ids=[1, 2, 3],
        spans=[ActionSpan(1, 3)],
        rollout_logprobs=[0.0, -1.0, -1.0],
        reward=reward,
        complete=complete,
        infrastructure_error=infra,
    )


def test_screen_group_rules() -> None:
    assert screen_group([sample(1), sample(0)]) is None
    assert screen_group([sample(1), sample(1)]) is GroupRejection.CONSTANT_REWARD
    assert screen_group([sample(0), sample(0)]) is GroupRejection.CONSTANT_REWARD
    assert screen_group([sample(1), sample(0, complete=False)]) is GroupRejection.INCOMPLETE
    assert (
        screen_group([sample(1), sample(0, infra="crm#2 timeout")]) is GroupRejection.INFRASTRUCTURE
    )


def test_infrastructure_failure_reads_ledger_error_kinds() -> None:
    def e(kind: ErrorKind | None) -> LedgerEntry:
        return LedgerEntry(seq=1, session_id="s", mcp="crm", tool="t", error_kind=kind)

    assert (
        infrastructure_failure([e(None), e(ErrorKind.TOOL_ERROR), e(ErrorKind.INVALID_ARGUMENTS)])
        is None
    )
    for kind in (ErrorKind.SERVER_CRASH, ErrorKind.TIMEOUT, ErrorKind.INFRASTRUCTURE):
        assert infrastructure_failure([e(None), e(kind)])


async def test_fill_batch_discards_and_replenishes() -> None:
    plans = {
        "a": [[sample(1, task="a"), sample(1, task="a")]],  # constant
        "b": [[sample(1, task="b"), sample(0, task="b", complete=False)]],  # incomplete
        "c": [
            [sample(1, task="c"), sample(0, task="c")],
            [sample(0, task="c"), sample(0, task="c")],
        ],
        "d": [[sample(0, task="d"), sample(1, task="d")]],
        "e": [[sample(0, task="e"), sample(1, task="e")]],
    }

    async def rollout(task: str) -> list[list[TurnSample]]:
        return plans[task]

    batch = await fill_batch(list(plans), rollout, 2)
    assert [g[0].task_id for g in batch.groups] == ["c", "d"]
    assert batch.stats.tasks_drawn == 4
    assert batch.stats.rejected == {"constant_reward": 2, "incomplete": 1}
    assert not batch.exhausted
    short = await fill_batch(["a", "c"], rollout, 5)
    assert short.exhausted and len(short.groups) == 1


async def test_a_task_that_keeps_failing_is_skipped_not_scored() -> None:
    async def rollout(task: str) -> list[list[TurnSample]]:
        if task == "bad":
            raise ConnectionError("megamcp down")
        return [[sample(1, task=task), sample(0, task=task)]]

    batch = await fill_batch(["bad", "ok"], rollout, 1)
    assert [g[0].task_id for g in batch.groups] == ["ok"]
    assert batch.stats.failed_tasks and "megamcp down" in batch.stats.failed_tasks[0]


async def test_physical_retries_only_for_infrastructure() -> None:
    calls = {"n": 0}

    async def flaky() -> str:
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionError("reset")
        return "ok"

    def infra(e: BaseException) -> bool:
        return isinstance(e, ConnectionError)

    assert await with_physical_retries(flaky, is_infrastructure=infra, max_retries=3) == ("ok", 2)

    async def policy_bug() -> str:
        raise ValueError("bad action")

    with pytest.raises(ValueError):
        await with_physical_retries(policy_bug, is_infrastructure=infra, max_retries=3)
    calls["n"] = 0
    with pytest.raises(ConnectionError):
        await with_physical_retries(flaky, is_infrastructure=infra, max_retries=1)


def test_sample_validates_alignment() -> None:
    with pytest.raises(ValueError, match="logprobs"):
        TurnSample("t", 0, 0, [1, 2], [ActionSpan(1, 2)], [0.0], 1.0)
    with pytest.raises(ValueError, match="span"):
        TurnSample("t", 0, 0, [1, 2], [ActionSpan(1, 3)], [0.0, 0.0], 1.0)
    s = TurnSample(
        "t",
        0,
        0,
        [1, 2, 3, 4],
        [ActionSpan(1, 2), ActionSpan(3, 4, frozenset({"x"}))],
        [0.0] * 4,
        1.0,
    )  # type: ignore[arg-type]
    assert s.action_mask() == [0, 1, 0, 1] and s.credit_mask() == [0, 0, 0, 1]


async def test_fill_batch_stops_drawing_at_max_tasks() -> None:
    import itertools

    async def constant(task: str) -> list[list[TurnSample]]:
        return [[sample(0, task=task), sample(0, task=task)]]

    batch = await fill_batch(itertools.cycle(["a", "b"]), constant, 2, max_tasks=5, concurrency=2)
    assert batch.exhausted and batch.groups == [] and batch.stats.tasks_drawn == 5
    assert batch.stats.rejected == {"constant_reward": 5}
