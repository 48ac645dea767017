"""Tie each tool call of a transcript to the ledger entry MegaMCP recorded for it.

Calls are matched per MCP in ledger order; within one assistant message (parallel tool calls may
be served in any order) a call matches the pending entry with the same tool and arguments. A call
with no entry is allowed only when its tool message reports an error (e.g. an unknown tool name
the harness refused locally); an entry with no call means something used the session outside the
transcript — both are reported.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from weft_core.models import ChatMessage, LedgerEntry
from weft_tasks.harness.mcp_tools import split_tool_name


def _args(text: str) -> Any:
    try:
        return json.loads(text or "{}")
    except json.JSONDecodeError:
        return text


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def match_ledger(
    messages: list[ChatMessage], ledger: dict[str, list[LedgerEntry]]
) -> tuple[list[LedgerEntry], dict[str, tuple[str, int]], list[str]]:
    """(entries with `call_id` set, {tool_call_id: (mcp, seq)}, problems)."""
    mcps = list(ledger)
    pending: dict[str, list[LedgerEntry]] = {
        m: sorted(es, key=lambda e: e.seq) for m, es in ledger.items()
    }
    matched: dict[str, tuple[str, int]] = {}
    out: dict[tuple[str, int], LedgerEntry] = {}
    problems: list[str] = []
    tool_replies = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    for msg in messages:
        if msg.role != "assistant" or not msg.tool_calls:
            continue
        per_mcp: dict[str, int] = defaultdict(int)
        routed = []
        for call in msg.tool_calls:
            where = split_tool_name(call.function.name, mcps)
            routed.append((call, where))
            if where:
                per_mcp[where[0]] += 1
        window = {m: pending[m][:n] for m, n in per_mcp.items()}
        for call, where in routed:
            entry = None
            if where:
                mcp, tool = where
                args = _args(call.function.arguments)
                for cand in window[mcp]:
                    if cand.tool == tool and _same(cand.arguments, args):
                        entry = cand
                        break
            if entry is None:
                reply = tool_replies.get(call.id)
                refused = reply is not None and _looks_like_error(reply.content)
                if not refused:
                    problems.append(
                        f"tool call {call.id} ({call.function.name}) has no matching ledger entry"
                    )
                continue
            window[entry.mcp if entry.mcp in window else where[0]].remove(entry)  # type: ignore[index]
            pending[where[0]].remove(entry)  # type: ignore[index]
            matched[call.id] = (where[0], entry.seq)  # type: ignore[index]
            out[(where[0], entry.seq)] = entry.model_copy(update={"call_id": call.id})  # type: ignore[index]
    for mcp, rest in pending.items():
        for entry in rest:
            problems.append(
                f"ledger entry {mcp}#{entry.seq} ({entry.tool}) has no tool call in the transcript"
            )
            out[(mcp, entry.seq)] = entry
    # Transcript order, not clock order: parallel calls of one message may start in any order,
    # and a trace must be the same bytes for the same episode. Unmatched entries go last.
    position = {
        call.id: i
        for i, call in enumerate(
            c for m in messages if m.role == "assistant" for c in m.tool_calls or []
        )
    }
    ordered = sorted(
        out.values(), key=lambda e: (position.get(e.call_id or "", len(position)), e.mcp, e.seq)
    )
    return ordered, matched, problems


def _looks_like_error(content: str | None) -> bool:
    low = (content or "").lower()
    return any(w in low for w in ("error", "not a valid tool", "unknown tool", "invalid", "failed"))


def trace_ledger_problems(messages: list[ChatMessage], ledger: list[LedgerEntry]) -> list[str]:
    """Disagreements between a finished trace's transcript and its ledger (empty = they agree):
    every ledger entry is tied to exactly one tool call of the same tool and arguments, and every
    tool call that reached MegaMCP has its entry."""
    problems: list[str] = []
    calls = {tc.id: tc for m in messages if m.tool_calls for tc in m.tool_calls}
    seen: set[str] = set()
    for entry in ledger:
        if entry.call_id is None:
            problems.append(f"ledger entry {entry.mcp}#{entry.seq} is not tied to a tool call")
            continue
        call = calls.get(entry.call_id)
        if call is None:
            problems.append(
                f"ledger entry {entry.mcp}#{entry.seq} names unknown call {entry.call_id}"
            )
            continue
        if entry.call_id in seen:
            problems.append(f"tool call {entry.call_id} is tied to two ledger entries")
        seen.add(entry.call_id)
        where = split_tool_name(call.function.name, sorted({e.mcp for e in ledger}))
        if where != (entry.mcp, entry.tool) or not _same(
            _args(call.function.arguments), entry.arguments
        ):
            problems.append(
                f"tool call {entry.call_id} differs from ledger entry {entry.mcp}#{entry.seq}"
            )
    replies = {m.tool_call_id: m for m in messages if m.role == "tool"}
    for cid, call in calls.items():
        if cid not in seen and not _looks_like_error(
            (replies.get(cid) or ChatMessage(role="tool")).content
        ):
            problems.append(f"tool call {cid} ({call.function.name}) reached no ledger entry")
    return problems
