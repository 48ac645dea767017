"""Materialising environments without a host: tool definitions reconstructed from a transcript of a
made-up server, s_0 files seeded from recorded outputs, write verbs in transcripts, and the
explorer's `<object>_id` rule (results and schemas as the example MCPs return and publish them)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from weft_toolspace.environments import example_names, seed_files, spec_from_traces
from weft_toolspace.exceptions import ToolSpaceUserError
from weft_toolspace.explore import ExplorerPolicy, role
from weft_toolspace.models import TraceCall, TraceRecord
from weft_toolspace.traces import from_openai_messages


def _call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    fn = {"name": name, "arguments": json.dumps(args)}
    return {
        "role": "assistant",
        "tool_calls": [{"id": f"c{i}", "type": "function", "function": fn}],
    }


def _reply(i: int, content: Any) -> dict[str, Any]:
    text = content if isinstance(content, str) else json.dumps(content)
    return {"role": "tool", "tool_call_id": f"c{i}", "content": text}


def library_transcript(trace_id: str = "lib-1", title: str = "Dune") -> TraceRecord:
    """A transcript of a server nobody can host ('library'): shelve a book, look it up, lend it."""
    book = {"book_id": "BOO-0007", "title": title, "author": "Frank Herbert"}
    msgs = [
        {"role": "user", "content": f"Shelve {title} and lend it to Ada."},
        _call(1, "library__add_book", {"title": title, "author": "Frank Herbert"}),
        _reply(1, {"book": book}),
        _call(2, "library__get_book", {"book_id": "BOO-0007"}),
        _reply(2, book),
        _call(3, "library__lend_book", {"book_id": "BOO-0007", "member": "Ada", "days": 14}),
        _reply(3, {"book_id": "BOO-0007", "status": "lent"}),
        _call(4, "library__lend_book", {"book_id": "BOO-0008", "member": "Bo"}),
        _reply(4, "Error: no book BOO-0008"),
    ]
    return from_openai_messages(msgs, trace_id=trace_id)


def test_transcript_write_verbs_mark_mutations() -> None:
    tr = library_transcript()
    assert [(c.tool, c.mutated) for c in tr.calls] == [
        ("add_book", True),
        ("get_book", False),
        ("lend_book", True),  # a verb that does not only look
        ("lend_book", False),  # failed: changed nothing
    ]


def test_spec_from_traces_reconstructs_tool_definitions() -> None:
    spec = spec_from_traces([library_transcript(), library_transcript("lib-2", "Emma")], "library")
    tools = {t.name: t for t in spec.tools}
    assert sorted(tools) == ["add_book", "get_book", "lend_book"]
    add = tools["add_book"].input_schema
    assert add["required"] == ["title", "author"]
    assert add["properties"]["title"] == {"type": "string", "examples": ["Dune", "Emma"]}
    lend = tools["lend_book"].input_schema
    # `days` was given by one call only: optional; typed from the recorded value.
    assert lend["required"] == ["book_id", "member"]
    assert lend["properties"]["days"]["type"] == "integer"
    out = tools["add_book"].output_schema
    assert (
        out is not None and out["properties"]["book"]["properties"]["book_id"]["type"] == "string"
    )
    with pytest.raises(ToolSpaceUserError, match="'nowhere'"):
        spec_from_traces([library_transcript()], "nowhere")


MEMORY_READ = {
    "entities": [
        {"name": "Ada Lovelace", "entityType": "person", "observations": ["engines"]},
        {"name": "Grace Hopper", "entityType": "person", "observations": []},
    ],
    "relations": [
        {"from": "Ada Lovelace", "to": "Grace Hopper", "relationType": "knows"},
        {"from": "Ada Lovelace", "to": "Nobody", "relationType": "knows"},
    ],
}


def test_seed_files_from_recorded_outputs() -> None:
    later = {"entities": [{"name": "Ada Lovelace", "entityType": "person", "observations": ["x"]}]}
    traces = [
        TraceRecord(
            id="m",
            source="ledger",
            calls=[
                TraceCall(mcp="memory", tool="read_graph", result=MEMORY_READ),
                TraceCall(mcp="memory", tool="open_nodes", arguments={"names": ["Ada"]}, result=later),
                TraceCall(mcp="memory", tool="read_graph", error="boom"),
            ],
        ),
        TraceRecord(
            id="f",
            source="ledger",
            calls=[
                TraceCall(mcp="filesystem", tool="read_text_file", arguments={"path": "a/b.md"}, result="hi"),
                TraceCall(mcp="filesystem", tool="read_text_file", arguments={"path": "../x"}, result="no"),
                TraceCall(mcp="filesystem", tool="read_text_file", arguments={"path": "/etc/x"}, result="no"),
            ],
        ),
    ]  # fmt: skip
    lines = [json.loads(x) for x in seed_files(traces, "memory")["memory.jsonl"].splitlines()]
    # The first recorded version of each entity (the state before the trace changed it); a
    # relation to an entity never shown is dropped, as the server keeps none.
    assert lines == [
        {"type": "entity", "name": "Ada Lovelace", "entityType": "person", "observations": ["engines"]},
        {"type": "entity", "name": "Grace Hopper", "entityType": "person", "observations": []},
        {"type": "relation", "from": "Ada Lovelace", "to": "Grace Hopper", "relationType": "knows"},
    ]  # fmt: skip
    assert seed_files(traces, "filesystem") == {"a/b.md": "hi\n"}  # no path outside the root
    assert seed_files(traces, "time") == {}


def test_seed_files_leave_out_what_the_trace_itself_made() -> None:
    # An explorer starts from empty servers: what its reads show, it wrote first. That is no
    # part of s_0 (seeding it made every later create_entities of the same name a no-op).
    made = {"name": "Alan Turing", "entityType": "person", "observations": ["ciphers"]}
    shown = {"entities": [made, *MEMORY_READ["entities"]], "relations": MEMORY_READ["relations"]}
    trace = TraceRecord(
        id="w",
        source="ledger",
        calls=[
            TraceCall(mcp="memory", tool="create_entities", arguments={"entities": [made]}, result=[made], mutated=True),
            TraceCall(mcp="memory", tool="add_observations", arguments={"observations": [{"entityName": "Ada Lovelace", "contents": ["engines"]}]}, result=[], mutated=True),
            TraceCall(mcp="memory", tool="read_graph", result=shown, mutated=False),
            TraceCall(mcp="filesystem", tool="write_file", arguments={"path": "n.md", "content": "x"}, result="ok", mutated=True),
            TraceCall(mcp="filesystem", tool="read_text_file", arguments={"path": "n.md"}, result="x", mutated=False),
        ],
    )  # fmt: skip
    lines = [json.loads(x) for x in seed_files([trace], "memory")["memory.jsonl"].splitlines()]
    assert [x.get("name") for x in lines] == ["Ada Lovelace", "Grace Hopper", None]
    assert lines[0]["observations"] == []  # the trace added "engines" itself
    assert seed_files([trace], "filesystem") == {}


def test_explorer_fills_object_ids_from_what_results_showed() -> None:
    schema = {
        "type": "object",
        "properties": {"customer_id": {"type": "string"}, "subject": {"type": "string"}},
        "required": ["customer_id", "subject"],
    }
    assert role("create_ticket", "customer_id") == "id:customer_id"
    assert role("read_file", "path") == "path"  # the real servers' roles are unchanged
    policy = ExplorerPolicy({"helpdesk": [("create_ticket", schema)]}, seed=3, guess=0.0)
    assert not policy.fillable("create_ticket", schema)  # no customer seen yet
    listed = {"items": [{"customer_id": "CUS-0002", "name": "Taylor Strickland"}]}
    policy.observe("crm", "list_customers", {}, listed, True)
    assert policy.follows("create_ticket", schema)
    mcp, tool, args = policy.next_call()
    assert (mcp, tool, args["customer_id"]) == ("helpdesk", "create_ticket", "CUS-0002")


def test_explorer_values_by_format() -> None:
    policy = ExplorerPolicy({}, seed=1)
    email = policy._by_type({"type": "string", "format": "email"}, "email")
    assert email.endswith("@example.org") and "@" in email
    start = policy._by_type({"type": "string", "format": "date"}, "start_date")
    end = policy._by_type({"type": "string", "format": "date"}, "end_date")
    assert start < end
    assert isinstance(policy._by_type({"type": "number", "minimum": 1}, "amount"), float)


def test_example_names_are_the_example_specs() -> None:
    assert {"crm", "helpdesk", "orders"} <= set(example_names())


def test_stateless_servers_are_those_that_keep_no_state() -> None:
    from weft_toolspace.environments import stateless

    flagged = TraceRecord(
        id="t",
        source="ledger",
        calls=[
            # A command-tier call is flagged when anything in its session changed: not evidence.
            TraceCall(mcp="time", tool="get_current_time", mutated=True),
            TraceCall(mcp="weather", tool="get_forecast", mutated=False),
            TraceCall(mcp="kennel", tool="create_dog", mutated=True),
        ],
    )
    assert stateless("time", [flagged])  # pointed at no workspace and no DB
    assert not stateless("memory", [])  # keeps its graph in the workspace
    assert not stateless("sqlite", [])
    assert stateless("weather", [flagged])  # known from traces only, never changed anything
    assert not stateless("kennel", [flagged])
