"""Execution-witnessed edges in the coverage-aware sampler (issue 16 item 6, ToolSpace into B1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_core.exceptions import ArtifactError
from weft_core.models import ExecutionEvidence, TaskEdge, TaskGraph, TaskNode, WitnessedEdge
from weft_core.models.task import EdgeKind
from weft_tasks.cli import main
from weft_tasks.compose.pipeline import witnessed_evidence
from weft_tasks.compose.profiles import Profile, Span
from weft_tasks.compose.sampler import CoverageSampler
from weft_tasks.compose.witnessed import WitnessIndex
from weft_tasks.exceptions import TasksUserError
from weft_tasks.settings import TasksSettings


def _pairs() -> Profile:
    return Profile(
        name="Pair",
        tasks=Span(min=2, max=2),
        mcps=Span(min=2, max=2),
        domains=Span(min=2, max=2),
        proportion=1,
    )


def _edge(sm: str, st: str, tm: str, tt: str, w: float = 1.0) -> WitnessedEdge:
    return WitnessedEdge(
        source_mcp=sm, source_tool=st, target_mcp=tm, target_tool=tt, kind="data", count=2, weight=w
    )


def _evidence(*edges: WitnessedEdge) -> ExecutionEvidence:
    return ExecutionEvidence(source="hand-written", edges=list(edges))


def test_off_is_the_evidence_free_ranking_exactly(libraries: list[Any], tmp_path: Path) -> None:
    path = tmp_path / "ev.json"
    path.write_text(
        _evidence(_edge("crm", "get_customer", "notes", "write_note")).model_dump_json()
    )
    # an evidence file alone does not change the ranking: the switch does
    assert witnessed_evidence(TasksSettings(evidence=path)) is None
    on = witnessed_evidence(TasksSettings(evidence=path, witnessed_ranking=True))
    assert on is not None and len(on.edges) == 1
    # evidence changes scores by its witness weights only: evidence that witnesses nothing in
    # these libraries leaves every score, the order and the random draws as they were
    plain = CoverageSampler(libraries, seed=5)
    blind = CoverageSampler(libraries, seed=5, witnessed=_evidence(_edge("x", "nope", "y", "no")))
    shape = plain.shape(_pairs())
    assert shape is not None and blind.shape(_pairs()) == shape
    ranked, ranked_blind = plain.candidates(shape), blind.candidates(shape)
    assert [(c.mcps, c.score) for c in ranked] == [(c.mcps, c.score) for c in ranked_blind]
    assert [t.id for t in plain.draw(ranked[0], 2)] == [t.id for t in blind.draw(ranked[0], 2)]


def test_a_witnessed_pair_ranks_higher(libraries: list[Any]) -> None:
    off = CoverageSampler(libraries, seed=1)
    shape = off.shape(_pairs())
    assert shape is not None
    ranked = off.candidates(shape)
    last = ranked[-1]  # the combination the evidence-free ranking likes least
    a, b = last.mcps
    tool_a, tool_b = off.libs[a].bundle.tools[0], off.libs[b].bundle.tools[0]
    on = CoverageSampler(libraries, seed=1, witnessed=_evidence(_edge(a, tool_a, b, tool_b)))
    assert on.shape(_pairs()) == shape
    ranked_on = on.candidates(shape)
    pos = [c.mcps for c in ranked_on].index(last.mcps)
    assert pos < len(ranked) - 1
    assert ranked_on[pos].features["witnessed"] == 1.0
    assert all(c.features["witnessed"] == 0.0 for c in ranked_on if c.mcps != last.mcps)
    assert "witnessed" not in last.features


def test_witnessed_tool_chains_are_drawn_first(libraries: list[Any]) -> None:
    # the evidence speaks of another server's tools by name (a real server's traces): its
    # write_note -> read_note edge is the notes MCP's write_note -> read_note chain
    ev = _evidence(_edge("real-notes-server", "write_note", "real-notes-server", "read_note"))
    picked_on, picked_off = set(), set()
    for seed in range(6):
        for witnessed, picked in ((ev, picked_on), (None, picked_off)):
            s = CoverageSampler(libraries, seed=seed, witnessed=witnessed)
            combo = s.score(["crm", "notes"], 2)
            assert combo is not None
            s.capacity["crm"] = 10  # most of the 3 drawn go to crm, one to notes
            notes = [t for t in s.draw(combo, 2) if t.mcp == "notes"]
            assert len(notes) == 1
            picked.add(tuple(notes[0].tool_chain))
    assert picked_on == {("write_note", "read_note")}
    assert len(picked_off) > 1  # without evidence the least-used tie is broken at random


def test_resolution_by_server_then_tool_name(libraries: list[Any]) -> None:
    tools = {lib.mcp: lib.bundle.tools for lib in libraries}
    idx = WitnessIndex(
        _evidence(
            _edge("crm", "find_customer", "helpdesk", "find_requester", 0.6),
            _edge("crm", "find_customer", "helpdesk", "create_ticket", 0.6),  # adds up, capped
            _edge("elsewhere", "no_such_tool", "notes", "read_note"),  # no library tool: dropped
        ),
        tools,
    )
    assert idx.combination(["crm", "helpdesk"]) == 1.0
    assert idx.combination(["crm", "helpdesk", "notes"]) == pytest.approx(1 / 3)
    assert idx.combination(["notes"]) == 0.0
    assert not WitnessIndex(_evidence(_edge("x", "nope", "y", "none")), tools)


def test_graph_witness_counts_pairs_and_steps(libraries: list[Any]) -> None:
    libs = {lib.mcp: lib for lib in libraries}
    crm = next(t for t in libs["crm"].tasks if t.tool_chain == ["find_customer", "get_customer"])
    desk = next(t for t in libs["helpdesk"].tasks if t.tool_chain[0] == "find_requester")
    graph = TaskGraph(
        id="g",
        objective="o",
        nodes=[
            TaskNode(id="a", task=crm, intent="i"),
            TaskNode(id="b", task=desk, intent="i"),
        ],
        edges=[TaskEdge(source="a", target="b", kind=EdgeKind.INFORMATION)],
    )
    idx = WitnessIndex(
        _evidence(_edge("crm", "get_customer", "helpdesk", "find_requester")),
        {m: lib.bundle.tools for m, lib in libs.items()},
    )
    w = idx.graph(graph)
    assert (w.mcp_pairs, w.mcp_pairs_witnessed) == (1, 1)
    # find_customer->get_customer, find_requester->create_ticket, get_customer->find_requester
    assert (w.tool_steps, w.tool_steps_witnessed) == (3, 1)


def test_bad_evidence_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "ev.json"
    bad.write_text('{"source": "x", "edges": [{"source_mcp": "a"}]}')
    with pytest.raises(ArtifactError, match=r"ev.json: not execution evidence: edges\.0\."):
        ExecutionEvidence.load(bad)
    with pytest.raises(TasksUserError, match="no evidence file"):
        witnessed_evidence(TasksSettings(witnessed_ranking=True))
    from weft_core.console import set_console

    set_console(None)
    argv = ["compose", str(tmp_path), "--n", "2", "-o", str(tmp_path / "t")]
    assert main([*argv, "--evidence", str(bad), "--witnessed-ranking"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "not execution evidence" in err and "Traceback" not in err
