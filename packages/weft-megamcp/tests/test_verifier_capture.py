"""What a checks verifier opens: only the DB sides, ledgers and workspaces its checks read."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from weft_core.checks import parse_checks
from weft_core.exceptions import UserError
from weft_megamcp.verifier import evaluate_checks


def _db(path: Path, emails: list[str]) -> str:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE contact (id INTEGER PRIMARY KEY, email TEXT)")
        conn.executemany("INSERT INTO contact (email) VALUES (?)", [(e,) for e in emails])
    conn.close()
    return str(path)


def _paths(tmp_path: Path) -> dict[str, dict[str, str | None]]:
    crm = tmp_path / "crm"
    crm.mkdir()
    ledger = crm / "ledger.jsonl"
    ledger.write_text(json.dumps({"tool": "add", "arguments": {}, "ok": True}) + "\n")
    # shop's files are not SQLite at all, and hr's ledger is garbage: a verifier that opened
    # them would fail, so these only pass when nothing of shop's DBs or hr's ledger is read.
    junk = tmp_path / "junk"
    junk.write_text("not a database")
    return {
        "crm": {
            "initial_db": _db(crm / "initial.db", ["a@x"]),
            "final_db": _db(crm / "final.db", ["a@x", "b@x"]),
            "ledger": str(ledger),
            "workspace": None,
        },
        "shop": {"initial_db": str(junk), "final_db": str(junk), "ledger": None, "workspace": None},
        "hr": {
            "initial_db": _db(tmp_path / "hr-initial.db", []),
            "final_db": str(tmp_path / "missing.db"),
            "ledger": str(junk),
            "workspace": None,
        },
    }


def test_checks_open_only_the_evidence_they_read(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    checks = parse_checks(
        [
            {"kind": "row_exists", "mcp": "crm", "table": "contact", "where": {"email": "b@x"}},
            {"kind": "row_count", "mcp": "hr", "db": "initial", "table": "contact", "value": 0},
        ]
    )
    outcomes = evaluate_checks(checks, {}, paths, frozen=True)
    assert [o.passed for o in outcomes] == [True, True], [o.reason for o in outcomes]


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"kind": "row_exists", "mcp": "shop", "table": "contact"}, "not a readable SQLite"),
        ({"kind": "row_exists", "mcp": "hr", "table": "contact"}, "no such SQLite file"),
        ({"kind": "call_made", "mcp": "hr", "tool": "add"}, "junk"),
    ],
)
def test_a_check_that_reads_a_broken_file_still_fails(
    tmp_path: Path, raw: dict[str, object], needle: str
) -> None:
    # run_verifier reports these errors as a failed verification (test_verifier.py)
    with pytest.raises(UserError, match=needle):
        evaluate_checks(parse_checks([raw]), {}, _paths(tmp_path), frozen=True)
