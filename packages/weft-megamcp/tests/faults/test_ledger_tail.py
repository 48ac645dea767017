"""A ledger whose last line a kill -9 tore mid-append still loads (that call was never
acknowledged); a torn line anywhere else is corruption and is reported."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from weft_core.models import LedgerEntry
from weft_megamcp.ledger import SessionLedger


def _entry(seq: int) -> LedgerEntry:
    return LedgerEntry(
        seq=seq,
        session_id="ses_1",
        group_id="grp_1",
        mcp="m",
        mcp_version=1,
        tool="add",
        arguments={"n": seq},
        result={"ok": True},
        is_error=False,
        started_at=datetime.now(UTC),
        duration_ms=1.0,
        mutated=True,
        state_version=seq + 1,
    )


def test_a_torn_last_line_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = SessionLedger(path)
    for i in range(3):
        ledger.append(_entry(i))
    whole = _entry(3).model_dump_json()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(whole[: len(whole) // 2])  # the kill came mid-write
    again = SessionLedger(path)
    assert [e.seq for e in again.entries] == [0, 1, 2]
    again.append(_entry(3))  # and appending goes on from a clean file
    assert [e.seq for e in SessionLedger(path).entries] == [0, 1, 2, 3]


def test_a_torn_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    lines = [_entry(i).model_dump_json() for i in range(3)]
    lines[1] = lines[1][:20]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError):
        SessionLedger(path)
