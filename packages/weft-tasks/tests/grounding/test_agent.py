from __future__ import annotations

import difflib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import TaskGraph
from weft_tasks.compose.composer import CompositionState, compose_graph
from weft_tasks.grounding.agent import ground
from weft_tasks.grounding.schema import build_db, check_rows


@pytest.fixture
def graph_and_bundles(libraries: list[Any]) -> tuple[TaskGraph, dict[str, Any]]:
    bundles = {
        lib.mcp: lib.bundle for lib in libraries if lib.mcp in ("crm", "helpdesk", "billing")
    }
    pool = [t for lib in libraries if lib.mcp in bundles for t in lib.tasks]
    state = compose_graph(
        CompositionState(
            graph_id="g", profile="Complex", objective="serve Ada", nodes_wanted=6, pool=pool
        ),
        bundles,
    )
    assert state.graph is not None and not state.issues
    return state.graph, {m: bundles[m] for m in state.graph.mcps}


def _keys(rows: dict[str, dict[str, list[dict[str, Any]]]]) -> set[tuple[str, str, Any]]:
    return {
        (m, t, r.get("id")) for m, tables in rows.items() for t, rs in tables.items() for r in rs
    }


def test_three_rounds_grow_the_state_and_keep_the_targets(graph_and_bundles: Any) -> None:
    graph, bundles = graph_and_bundles
    before = graph.model_dump_json()
    g = ground(graph, bundles, distractors=2)
    assert g.failed is None and len(g.rounds) == 3
    r1, r2, r3 = (g.rows(i) for i in (1, 2, 3))
    assert _keys(r1) < _keys(r2) <= _keys(r3) and _keys(r2) < _keys(r3)
    # every node's fixture rows are in round (i) exactly as composition re-grounded them
    for n in graph.nodes:
        for table, rows in n.task.seed_rows.items():
            for row in rows:
                assert row in r1[n.task.mcp][table]
    # later rounds never replace a target row: the round-(i) rows are unchanged in round (iii)
    for mcp, tables in r1.items():
        for table, rows in tables.items():
            for row in rows:
                assert row in r3[mcp][table]
    # distractors never impersonate the bound customer: no field of their own holds a bound
    # value (a reference to the bound customer is a row *of* that customer, not the customer)
    bound = {v for b in graph.bindings for v in b.value.values()}
    added3 = g.rounds[2]
    for m, tables in added3.items():
        for t, rows in tables.items():
            fks = {f.name for f in bundles[m].entities.entity(t).fields if f.foreign_key}
            for r in rows:
                assert not any(
                    isinstance(v, str) and v in bound for k, v in r.items() if k not in fks
                ), r
    # near-duplicates of the targets are new rows (keys the seed never had) that read almost
    # like a target: what a careless agent would pick
    twins = [
        (m, t, r)
        for m, tables in added3.items()
        for t, rows in tables.items()
        for r in rows
        if r.get(bundles[m].entities.entity(t).key)
        not in {s.get(bundles[m].entities.entity(t).key) for s in bundles[m].rows(t)}
    ]
    assert twins
    for m, t, r in twins:
        key = bundles[m].entities.entity(t).key
        near = [x for x in r1[m][t] if x.get(key) != r.get(key)]
        assert any(
            f != key
            and isinstance(v, str)
            and v != r.get(f)
            and difflib.SequenceMatcher(None, v, str(r.get(f))).ratio() >= 0.8
            for x in near
            for f, v in x.items()
        ), (t, r)
    # the completion conditions are the graph's own, untouched by grounding
    assert g.graph.model_dump_json() == before


def test_relations_round_adds_history_of_the_bound_object(graph_and_bundles: Any) -> None:
    graph, bundles = graph_and_bundles
    g = ground(graph, bundles)
    email = graph.bindings[0].value["email"]
    if "billing" in g.rounds[1]:
        invoices = g.rounds[1]["billing"].get("invoice", [])
        assert all(r["customer_email"] == email for r in invoices)


def test_schema_checks_name_the_bad_row(bundle_dirs: dict[str, Path], tmp_path: Path) -> None:
    from weft_tasks.atomic.bundle import load_bundle

    helpdesk = load_bundle(bundle_dirs["helpdesk"])
    ok, issues = check_rows(
        "helpdesk",
        helpdesk.entities,
        {
            "requester": [
                {"id": 10, "email": "x@y", "name": "X"},
                {"id": 11, "email": "z@y", "nick": "Z"},
            ],
            "ticket": [
                {
                    "id": 9,
                    "requester_id": 10,
                    "subject": "s",
                    "status": "pending",
                    "priority": "low",
                },
                {"id": 8, "requester_id": 10, "subject": None, "status": "open", "priority": "low"},
            ],
            "payroll": [{"id": 1}],
        },
    )
    messages = " | ".join(i.message for i in issues)
    assert "unknown column(s) ['nick']" in messages and "'pending' is not one of" in messages
    assert "may not be null" in messages and "unknown table 'payroll'" in messages
    assert ok == {"requester": [{"id": 10, "email": "x@y", "name": "X"}]}
    # the SQLite schema catches what the entity model cannot: uniqueness and dangling references
    dest = tmp_path / "s.sqlite"
    issues = build_db(
        "helpdesk",
        helpdesk.seed_path,
        {
            "requester": [
                {"id": 1, "email": "a@b", "name": "A"},
                {"id": 2, "email": "a@b", "name": "B"},
            ],
            "ticket": [
                {"id": 5, "requester_id": 77, "subject": "s", "status": "open", "priority": "low"}
            ],
        },
        dest,
    )
    text = " | ".join(i.message for i in issues)
    assert "UNIQUE" in text and "references a missing requester" in text
    con = sqlite3.connect(dest)
    assert con.execute("select count(*) from requester").fetchone()[0] == 1
    assert con.execute("select count(*) from ticket").fetchone()[0] == 0


def test_llm_rows_are_checked_and_targets_protected(graph_and_bundles: Any, scripted: Any) -> None:
    graph, bundles = graph_and_bundles
    target = next(
        r for n in graph.nodes if n.task.mcp == "crm" for r in n.task.seed_rows.get("customer", [])
    )
    proposal = {
        "rows": {
            "crm": {
                "customer": [
                    {**target, "name": "Impostor"},  # would replace a target
                    {
                        "id": 90,
                        "name": "Zed",
                        "email": "zed@example.com",
                        "tier": "platinum",
                    },  # bad enum
                    {
                        "id": 91,
                        "name": "Yan",
                        "email": "yan@example.com",
                        "tier": "gold",
                        "city": "Oslo",
                    },
                    # a new key with the target's unique email: the DB could not hold both
                    {**target, "id": 92, "name": "Twin"},
                ]
            },
            "payroll": {"employee": [{"id": 1}]},  # not an MCP of the graph
        }
    }
    llm = scripted([json.dumps(proposal), json.dumps({"rows": {}}), json.dumps({"rows": {}})])
    g = ground(graph, bundles, llm)
    crm = g.rows()["crm"]["customer"]
    assert target in crm and not any(r.get("name") == "Impostor" for r in crm)
    assert any(r["id"] == 91 for r in crm) and not any(r["id"] in (90, 92) for r in crm)
    text = " | ".join(g.issues)
    assert "would replace a target entity" in text and "platinum" in text and "payroll" in text
    assert f"row id=92 has email={target['email']!r}, unique and already held by id=" in text


def test_two_targets_sharing_a_unique_value_fail_round_one(graph_and_bundles: Any) -> None:
    # Two atomic tasks may name one object under two keys (a library whose tasks were seeded
    # apart): the initial DB can hold only one of them, so every replay of the composed task
    # would fail on the other. Grounding rejects it before any replay runs.
    graph, bundles = graph_and_bundles
    node = next(n for n in graph.nodes if n.task.mcp == "crm" and n.task.seed_rows.get("customer"))
    row = node.task.seed_rows["customer"][0]
    twin = {**row, "id": 900}
    task = node.task.model_copy(
        update={"seed_rows": {**node.task.seed_rows, "customer": [row, twin]}}
    )
    nodes = [n.model_copy(update={"task": task}) if n.id == node.id else n for n in graph.nodes]
    g = ground(graph.model_copy(update={"nodes": nodes}), bundles)
    assert g.failed is not None and "target entities fail the schema" in g.failed
    assert f"row id=900 has email={row['email']!r}, unique and already held by id=" in g.failed
    # without the twin the same graph grounds
    assert ground(graph, bundles).failed is None
