from __future__ import annotations

import json
from pathlib import Path

import pytest

from weft_core.checks import Evidence, EvidenceError, evaluate, evidence_from_paths, load_ledger
from weft_core.state import StateError


def test_evidence_from_paths_captures_and_diffs(shop_paths: dict[str, Path]) -> None:
    ev = evidence_from_paths(shop_paths["initial"], shop_paths["final"], frozen=True)
    diff = ev.state_diff()
    assert diff is not None
    assert diff.summary()["order"] == {"inserts": 1, "updates": 1, "deletes": 0}
    assert ev.state_diff() is diff  # computed once
    assert ev.workspace_diff() is None
    assert ev.ledger == []


def test_workspace_diff(shop_paths: dict[str, Path]) -> None:
    ev = evidence_from_paths(
        workspace_before=shop_paths["before"], workspace_after=shop_paths["after"]
    )
    wdiff = ev.workspace_diff()
    assert wdiff is not None and sorted(wdiff.added) == ["blob.bin", "reports/summary.md"]


def test_ledger_from_jsonl_and_json(tmp_path: Path) -> None:
    entry = {
        "seq": 0,
        "session_id": "s",
        "mcp": "m",
        "tool": "t",
        "arguments": {"a": 1},
        "result": "ok",
    }
    jsonl = tmp_path / "ledger.jsonl"
    jsonl.write_text(json.dumps(entry) + "\n\n" + json.dumps({**entry, "seq": 1}) + "\n")
    assert [e.seq for e in load_ledger(jsonl)] == [0, 1]
    as_json = tmp_path / "ledger.json"
    as_json.write_text(json.dumps([entry]))
    ev = evidence_from_paths(ledger=as_json)
    assert evaluate([{"kind": "call_made", "tool": "t", "arguments": {"a": 1}}], ev).passed


def test_bad_ledger_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "ledger.jsonl"
    bad.write_text('{"seq": 0, "session_id": "s", "mcp": "m", "tool": "t"}\n{"seq": "x"}\n')
    with pytest.raises(EvidenceError, match=r"line 2: not a ledger entry: seq"):
        load_ledger(bad)
    bad.write_text("{not json\n")
    with pytest.raises(EvidenceError, match="line 1: not valid JSON"):
        load_ledger(bad)
    with pytest.raises(EvidenceError, match="cannot read ledger"):
        load_ledger(tmp_path / "missing.jsonl")
    with pytest.raises(EvidenceError, match="ledger entry 0"):
        load_ledger([{"tool": "t"}])


def test_missing_db_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(StateError):
        evidence_from_paths(tmp_path / "nope.sqlite")


def test_evidence_round_trips_through_json(shop: Evidence) -> None:
    again = Evidence.model_validate_json(shop.model_dump_json())
    checks = [{"kind": "no_other_changes"}, {"kind": "call_made", "tool": "ship_order"}]
    assert evaluate(checks, again) == evaluate(checks, shop)


# ---- captures limited to the tables the checks read ----------------------------------------

_LIMITABLE = [
    {"kind": "row_exists", "table": "order", "where": {"id": 12, "customer_id": 2}},
    {
        "kind": "field_equals",
        "table": "customer",
        "where": {"id": 2},
        "field": "tier",
        "value": "gold",
    },
    {"kind": "row_count", "table": "order", "where": {"status": "pending"}, "value": 2},
    {"kind": "diff_contains", "table": "order", "change": "update", "where": {"id": 10}},
    {"kind": "row_absent", "table": "refund", "where": {}},  # no such table: an error, both ways
    {"kind": "diff_contains", "table": "nope", "change": "insert"},
    {"kind": "call_made", "tool": "ship_order"},
]


def test_tables_read_names_only_what_checks_read() -> None:
    from weft_core.checks import parse_checks, reads_workspace, tables_read

    checks = parse_checks(_LIMITABLE)
    assert tables_read(checks) == {"order", "customer", "refund", "nope"}
    other = parse_checks([{"kind": "row_exists", "table": "t", "mcp": "crm"}])
    assert tables_read(other, "shop") == set() and tables_read(other, "crm") == {"t"}
    assert tables_read(parse_checks([{"kind": "no_other_changes"}])) is None  # reads every table
    assert not reads_workspace(checks)
    assert reads_workspace(parse_checks([{"kind": "workspace_file", "path": "a.txt"}]), "shop")


def test_db_sides_and_ledger_read_name_only_what_checks_read() -> None:
    from weft_core.checks import db_sides_read, parse_checks, reads_ledger

    rows = parse_checks(
        [
            {"kind": "row_exists", "table": "t", "mcp": "crm"},
            {"kind": "row_absent", "table": "t", "db": "initial", "mcp": "crm"},
            {"kind": "call_made", "tool": "ship", "mcp": "shop"},
        ]
    )
    assert db_sides_read(rows, "crm") == {"final", "initial"}
    assert db_sides_read(rows[:1], "crm") == {"final"}
    assert db_sides_read(rows, "shop") == set()  # a ledger check opens no DB
    assert db_sides_read(rows, "hr") == set()  # nothing names hr
    diff = parse_checks([{"kind": "diff_contains", "table": "t", "change": "insert"}])
    assert db_sides_read(diff, "any") == {"initial", "final"}  # no MCP named: every MCP
    assert db_sides_read(parse_checks([{"kind": "no_other_changes"}])) == {"initial", "final"}
    assert reads_ledger(rows, "shop") and not reads_ledger(rows, "crm")
    assert reads_ledger(parse_checks([{"kind": "return_contains", "tool": "x", "value": 1}]))
    assert not reads_ledger(diff) and not reads_ledger(
        parse_checks([{"kind": "workspace_file", "path": "a.txt"}])
    )


def test_a_limited_capture_evaluates_exactly_as_a_whole_one(shop_paths: dict[str, Path]) -> None:
    from weft_core.checks import parse_checks, tables_read

    checks = parse_checks(_LIMITABLE)
    whole = evidence_from_paths(shop_paths["initial"], shop_paths["final"], frozen=True)
    limited = evidence_from_paths(
        shop_paths["initial"], shop_paths["final"], frozen=True, tables=tables_read(checks)
    )
    assert limited.final is not None and sorted(limited.final.tables) == ["customer", "order"]
    assert limited.final.uncaptured == ["audit"]
    a, b = evaluate(checks, whole).outcomes, evaluate(checks, limited).outcomes
    assert [(o.passed, o.reason) for o in a] == [(o.passed, o.reason) for o in b]
    assert [o.passed for o in a] == [True, False, True, True, False, False, False]  # no ledger
    assert "audit" in a[4].reason and "audit" in b[4].reason  # known tables listed
