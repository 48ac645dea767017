"""Trace readers: Weft traces, MegaMCP ledgers and OpenAI-format chat transcripts, each normalised
to ordered (tool, arguments, result, error) calls (the corpus M of §4.1.1)."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from weft_core.models import LedgerEntry, Trace
from weft_toolspace.exceptions import ToolSpaceUserError
from weft_toolspace.models import TraceCall, TraceRecord


def parse_value(value: Any) -> Any:
    """A result as data: MCP content blocks unwrapped, JSON text parsed, and Python-literal text
    (some reference servers return `str(list_of_dicts)`) read too; anything else unchanged."""
    if isinstance(value, dict) and ("structuredContent" in value or "content" in value):
        if value.get("structuredContent") is not None:
            return parse_value(value["structuredContent"])
        blocks = value.get("content")
        if isinstance(blocks, list):
            texts = [b.get("text", "") for b in blocks if isinstance(b, dict)]
            return parse_value("\n".join(texts))
    if isinstance(value, dict) and set(value) == {"result"}:
        return parse_value(value["result"])
    if isinstance(value, dict) and set(value) == {"content"} and isinstance(value["content"], str):
        return parse_value(value["content"])
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "[{":
            try:
                return json.loads(text)
            except ValueError:
                try:
                    return ast.literal_eval(text)
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    return value
    return value


def from_ledger_entries(
    entries: Iterable[LedgerEntry], *, trace_id: str, prompt: str = ""
) -> TraceRecord:
    """One trajectory from ledger entries of one group (any number of MCPs): ordered by the time
    each call started, so adjacent calls are adjacent in the agent's own order."""
    ordered = sorted(entries, key=lambda e: (e.started_at, e.seq))
    calls = [
        TraceCall(
            mcp=e.mcp,
            tool=e.tool,
            arguments=dict(e.arguments),
            result=None if e.is_error else parse_value(e.result),
            error=str(e.result) if e.is_error else None,
            error_kind=e.error_kind.value if e.error_kind else None,
            mutated=e.mutated,
        )
        for e in ordered
    ]
    return TraceRecord(id=trace_id, source="ledger", prompt=prompt, calls=calls)


def from_group_ledger(
    ledger: Mapping[str, Sequence[LedgerEntry]], *, trace_id: str, prompt: str = ""
) -> TraceRecord:
    """`MegaMCPClient.ledger(group)` ({mcp: entries}) as one trajectory."""
    return from_ledger_entries(
        [e for entries in ledger.values() for e in entries], trace_id=trace_id, prompt=prompt
    )


def from_weft_trace(trace: Trace) -> TraceRecord:
    """A Weft rollout trace: its ledger is the execution record; its first user message the prompt."""
    prompt = next((m.content or "" for m in trace.messages if m.role == "user"), "")
    return from_ledger_entries(trace.ledger, trace_id=trace.id, prompt=prompt)


# OpenAI transcripts carry no mutation flag. MCP tool names put the verb first (as the example
# MCPs and the real servers do): a call whose verb only looks (reads, lists, searches, computes)
# changed nothing; any other verb (create, lend, ship, ...) is taken to have changed state when
# the call succeeded. A wrong "mutated" costs a state edge that counterfactual replay never finds.
READ_VERBS = frozenset(
    [
        "get",
        "read",
        "list",
        "search",
        "find",
        "show",
        "describe",
        "query",
        "fetch",
        "lookup",
        "view",
        "count",
        "check",
        "validate",
        "convert",
        "calculate",
        "compute",
        "format",
        "parse",
        "explain",
        "summarize",
        "directory",
    ]
)


def write_verb(tool: str) -> bool:
    return tool.split("__")[-1].split("_")[0].lower() not in READ_VERBS


_ERROR_PREFIXES = ("error", "traceback", "exception")


def _openai_error(content: str, parsed: Any) -> bool:
    # OpenAI transcripts carry no error flag; public corpora mark failures in the text itself.
    if isinstance(parsed, dict) and (parsed.get("isError") is True or "error" in parsed):
        return True
    return content.strip().lower().startswith(_ERROR_PREFIXES)


def from_openai_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    trace_id: str,
    tool_server: Mapping[str, str] | None = None,
) -> TraceRecord:
    """An OpenAI chat transcript: assistant `tool_calls` paired with `tool` replies by id.

    `tool_server` maps a tool name to its server when the transcript does not say; a name of the
    form `server__tool` (the MCP adapters' convention) names its server itself."""
    pending: dict[str, tuple[str, str, dict[str, Any]]] = {}
    calls: list[TraceCall] = []
    prompt = ""
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "user" and not prompt:
            prompt = str(msg.get("content") or "")
        for tc in msg.get("tool_calls") or [] if role == "assistant" else []:
            fn = tc.get("function") or {}
            name = str(fn.get("name") or "")
            raw = fn.get("arguments") or "{}"
            try:
                args = json.loads(raw) if isinstance(raw, str) else dict(raw)
            except ValueError as exc:
                raise ToolSpaceUserError(
                    f"trace {trace_id!r} message {i}: arguments of {name!r} are not JSON ({exc})"
                ) from None
            if not isinstance(args, dict):
                raise ToolSpaceUserError(
                    f"trace {trace_id!r} message {i}: arguments of {name!r} are not an object"
                )
            mcp, _, tool = name.rpartition("__") if "__" in name else ("", "", name)
            mcp = mcp or (tool_server or {}).get(tool, "")
            pending[str(tc.get("id"))] = (mcp, tool, args)
        if role == "tool":
            key = str(msg.get("tool_call_id"))
            if key not in pending:
                raise ToolSpaceUserError(
                    f"trace {trace_id!r} message {i}: tool reply to unknown call id {key!r}"
                )
            mcp, tool, args = pending.pop(key)
            content = msg.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            parsed = parse_value(text)
            failed = _openai_error(text, parsed)
            calls.append(
                TraceCall(
                    mcp=mcp,
                    tool=tool,
                    arguments=args,
                    result=None if failed else parsed,
                    error=text if failed else None,
                    # No flag in the transcript: a tool named by a write verb is taken to have
                    # changed state when it succeeded (what makes its environment an operation one).
                    mutated=not failed and write_verb(tool),
                )
            )
    return TraceRecord(id=trace_id, source="openai", prompt=prompt, calls=calls)


def read_record(obj: Mapping[str, Any], *, default_id: str) -> TraceRecord:
    """Any one supported JSON object: a TraceRecord, a Weft Trace, `{"ledger": {...}}` from
    MegaMCP, or an OpenAI transcript (`{"messages": [...]}`)."""
    if obj.get("source") in ("ledger", "weft-trace", "openai") and "calls" in obj:
        return TraceRecord.model_validate(obj)
    if "harness" in obj and "ledger" in obj:
        return from_weft_trace(Trace.model_validate(obj))
    if isinstance(obj.get("ledger"), dict):
        ledger = {
            str(m): [LedgerEntry.model_validate(e) for e in entries]
            for m, entries in obj["ledger"].items()
        }
        return from_group_ledger(
            ledger, trace_id=str(obj.get("id", default_id)), prompt=str(obj.get("prompt", ""))
        )
    if isinstance(obj.get("messages"), list):
        return from_openai_messages(obj["messages"], trace_id=str(obj.get("id", default_id)))
    raise ToolSpaceUserError(
        f"{default_id}: not a trace (expected a Weft Trace, a MegaMCP ledger or OpenAI messages)"
    )


def load_traces(paths: Iterable[str | Path]) -> tuple[list[TraceRecord], list[str]]:
    """Every trace in JSON / JSONL files (or folders of them). A bad file or line is reported as
    one line naming it, and the rest of the batch is still read."""
    records: list[TraceRecord] = []
    failures: list[str] = []
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.rglob("*.json*")) if p.is_dir() else [p])
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except OSError as exc:
            failures.append(f"{f}: cannot read ({exc.strerror})")
            continue
        chunks = (
            [(n + 1, line) for n, line in enumerate(text.splitlines()) if line.strip()]
            if f.suffix == ".jsonl"
            else [(0, text)]
        )
        for line_no, chunk in chunks:
            where = f"{f}:{line_no}" if line_no else str(f)
            try:
                obj = json.loads(chunk)
                items = obj if isinstance(obj, list) else [obj]
                for k, item in enumerate(items):
                    if not isinstance(item, dict):
                        raise ToolSpaceUserError(f"{where}: item {k} is not an object")
                    records.append(read_record(item, default_id=f"{f.stem}-{line_no}-{k}"))
            except (ToolSpaceUserError, ValidationError) as exc:
                first = str(exc).splitlines()[0]
                failures.append(first if first.startswith(str(f)) else f"{where}: {first}")
            except ValueError as exc:
                failures.append(f"{where}: not JSON ({exc})")
    return records, failures
