from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from weft_core.models import ErrorKind, LedgerEntry
from weft_toolspace.traces import from_group_ledger, from_openai_messages, load_traces, parse_value

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _entry(seq: int, mcp: str, tool: str, at: int, **kw: object) -> LedgerEntry:
    return LedgerEntry(
        seq=seq,
        session_id=f"s-{mcp}",
        mcp=mcp,
        tool=tool,
        started_at=T0 + timedelta(seconds=at),
        **kw,  # type: ignore[arg-type]
    )


def test_group_ledger_interleaves_sessions_by_start_time() -> None:
    ledger = {
        "sqlite": [_entry(0, "sqlite", "read_query", 1, result="[{'id': 1, 'name': 'Ada'}]")],
        "memory": [
            _entry(0, "memory", "read_graph", 0, result={"entities": []}),
            _entry(
                1,
                "memory",
                "open_nodes",
                2,
                result="boom",
                is_error=True,
                error_kind=ErrorKind.TOOL_ERROR,
            ),
        ],
    }
    rec = from_group_ledger(ledger, trace_id="g1")
    assert [c.tool for c in rec.calls] == ["read_graph", "read_query", "open_nodes"]
    assert rec.calls[1].result == [{"id": 1, "name": "Ada"}]  # Python-literal text parsed
    assert rec.calls[2].error == "boom" and rec.calls[2].error_kind == "tool_error"
    assert rec.calls[2].result is None


def test_openai_transcript_pairs_calls_and_replies() -> None:
    msgs = [
        {"role": "user", "content": "find Ada"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "crm__search", "arguments": '{"q": "Ada"}'},
                },
                {"id": "b", "type": "function", "function": {"name": "lookup", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": '{"id": "CUS-1"}'},
        {"role": "tool", "tool_call_id": "b", "content": "Error: missing id"},
    ]
    rec = from_openai_messages(msgs, trace_id="t", tool_server={"lookup": "crm"})
    assert rec.prompt == "find Ada"
    assert [(c.mcp, c.tool, c.ok) for c in rec.calls] == [
        ("crm", "search", True),
        ("crm", "lookup", False),
    ]
    assert rec.calls[0].result == {"id": "CUS-1"}


def test_load_traces_reports_bad_lines_and_keeps_the_rest(tmp_path: Path) -> None:
    good = {"id": "x", "messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps(good)
        + "\n{not json\n"
        + json.dumps({"foo": 1})
        + "\n"
        + json.dumps({"messages": [{"role": "tool", "tool_call_id": "z", "content": "x"}]})
        + "\n"
    )
    records, failures = load_traces([tmp_path])
    assert [r.id for r in records] == ["x"]
    assert len(failures) == 3
    assert failures[0].startswith(f"{path}:2: not JSON")
    assert f"{path}:3" in failures[1] and "not a trace" in failures[1]
    assert "unknown call id 'z'" in failures[2]


def test_parse_value_unwraps_mcp_results() -> None:
    assert parse_value({"content": [{"type": "text", "text": '{"a": 1}'}]}) == {"a": 1}
    assert parse_value({"structuredContent": {"result": [1, 2]}}) == [1, 2]
    assert parse_value("plain text") == "plain text"
