import json

from weft_core.models import ChatMessage, LedgerEntry, ToolCall, ToolCallFunction
from weft_tasks.rollout import match_ledger, trace_ledger_problems


def _call(cid, name, args):
    return ToolCall(id=cid, function=ToolCallFunction(name=name, arguments=json.dumps(args)))


def _entry(mcp, seq, tool, args, **kw):
    return LedgerEntry(seq=seq, session_id=f"s-{mcp}", mcp=mcp, tool=tool, arguments=args, **kw)


def test_parallel_calls_served_out_of_order_still_match():
    messages = [
        ChatMessage(role="user", content="go"),
        ChatMessage(
            role="assistant",
            tool_calls=[
                _call("a", "crm_get", {"id": 1}),
                _call("b", "crm_get", {"id": 2}),
                _call("c", "desk_list", {}),
            ],
        ),
        ChatMessage(role="tool", tool_call_id="a", content="{}"),
        ChatMessage(role="tool", tool_call_id="b", content="{}"),
        ChatMessage(role="tool", tool_call_id="c", content="[]"),
    ]
    ledger = {
        "crm": [_entry("crm", 0, "get", {"id": 2}), _entry("crm", 1, "get", {"id": 1})],
        "desk": [_entry("desk", 0, "list", {})],
    }
    entries, matched, problems = match_ledger(messages, ledger)
    assert problems == []
    assert matched == {"a": ("crm", 1), "b": ("crm", 0), "c": ("desk", 0)}
    assert trace_ledger_problems(messages, entries) == []


def test_locally_refused_calls_are_allowed_but_unexplained_entries_and_mismatches_are_not():
    messages = [
        ChatMessage(role="assistant", tool_calls=[_call("x", "crm_nope", {})]),
        ChatMessage(role="tool", tool_call_id="x", content="Error: crm_nope is not a valid tool"),
        ChatMessage(role="assistant", tool_calls=[_call("y", "crm_get", {"id": 1})]),
        ChatMessage(role="tool", tool_call_id="y", content="{}"),
    ]
    ledger = {"crm": [_entry("crm", 0, "get", {"id": 9}), _entry("crm", 1, "delete", {"id": 1})]}
    entries, matched, problems = match_ledger(messages, ledger)
    assert "x" not in matched
    assert any("tool call y" in p for p in problems)  # arguments differ from the served call
    assert any("crm#1 (delete) has no tool call" in p for p in problems)
    assert trace_ledger_problems(messages, entries)  # the finished trace disagrees too


def test_a_silently_missing_call_is_reported_by_the_trace_check():
    messages = [
        ChatMessage(role="assistant", tool_calls=[_call("y", "crm_get", {"id": 1})]),
        ChatMessage(role="tool", tool_call_id="y", content='{"id": 1}'),
    ]
    assert trace_ledger_problems(messages, []) == ["tool call y (crm_get) reached no ledger entry"]
    tied = [_entry("crm", 0, "get", {"id": 2}, call_id="y")]
    assert any("differs" in p for p in trace_ledger_problems(messages, tied))
