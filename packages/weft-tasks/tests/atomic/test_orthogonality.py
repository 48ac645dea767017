from __future__ import annotations

import pytest

from weft_core.models import AtomicTask
from weft_tasks.atomic.orthogonality import (
    filter_orthogonal,
    is_subsequence,
    tool_coverage,
    uncovered_tools,
)


def task(tid: str, *chain: str) -> AtomicTask:
    return AtomicTask(id=tid, mcp="m", intent=tid, tool_chain=list(chain))


@pytest.mark.parametrize(
    ("inner", "outer", "expected"),
    [
        (["a", "c"], ["a", "b", "c"], True),  # contiguity not required
        (["c", "a"], ["a", "b", "c"], False),  # order kept
        (["a", "a"], ["a", "b"], False),  # multiplicity counts
        (["a", "a"], ["a", "b", "a"], True),
        ([], ["a"], True),
        (["a"], [], False),
    ],
)
def test_is_subsequence(inner: list[str], outer: list[str], expected: bool) -> None:
    assert is_subsequence(inner, outer) is expected


def test_contained_chain_is_dropped_whatever_its_position() -> None:
    kept, dropped = filter_orthogonal([task("long", "a", "b", "c"), task("short", "a", "c")])
    assert [t.id for t in kept] == ["long"]
    assert (
        dropped[0].task_id == "short" and dropped[0].kept_by == "long" and not dropped[0].identical
    )
    kept, _ = filter_orthogonal([task("short", "a", "c"), task("long", "a", "b", "c")])
    assert [t.id for t in kept] == ["long"]


def test_identical_chains_keep_the_earlier_task() -> None:
    kept, dropped = filter_orthogonal(
        [task("first", "a", "b"), task("second", "a", "b"), task("third", "a", "b")]
    )
    assert [t.id for t in kept] == ["first"]
    assert {d.task_id for d in dropped} == {"second", "third"}
    assert all(d.identical and d.kept_by == "first" for d in dropped)


def test_sharing_tools_alone_is_not_redundancy() -> None:
    tasks = [task("ab", "a", "b"), task("ba", "b", "a"), task("ac", "a", "c")]
    kept, dropped = filter_orthogonal(tasks)
    assert [t.id for t in kept] == ["ab", "ba", "ac"] and dropped == []


def test_identical_to_a_contained_chain_drops_both_copies() -> None:
    kept, dropped = filter_orthogonal([task("x1", "a"), task("x2", "a"), task("big", "b", "a")])
    assert [t.id for t in kept] == ["big"]
    assert len(dropped) == 2


def test_coverage_counts_distinct_tools_of_retained_chains() -> None:
    retained = [task("1", "a", "b"), task("2", "b", "c")]
    assert tool_coverage(retained, ["a", "b", "c", "d"]) == pytest.approx(0.75)
    assert uncovered_tools(retained, ["a", "b", "c", "d"]) == ["d"]
    assert tool_coverage([], ["a"]) == 0.0
    assert tool_coverage(retained, []) == 0.0


def test_coverage_ignores_tools_outside_the_mcp() -> None:
    assert tool_coverage([task("1", "a", "zzz")], ["a", "b"]) == pytest.approx(0.5)
