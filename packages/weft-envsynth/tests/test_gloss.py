"""A tool's description read as `verb object place` (gloss): a name verb no list knows becomes the
write its description states, and a create with no documented output confirms itself in the
description's words."""

from __future__ import annotations

from typing import Any

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth.analyze import analyze_programmatic, classify_operation
from weft_envsynth.backend import backend, render_server
from weft_envsynth.contracts import contracts
from weft_envsynth.gloss import description_gloss, glossed_write, write_confirmation
from weft_envsynth.schema import schema_programmatic

INSIGHT = {"insight": {"type": "string", "description": "Business insight discovered from data"}}


def _tool(name: str, desc: str, props: dict[str, Any] | None = None, **extra: Any) -> ToolSpec:
    props = INSIGHT if props is None else props
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": list(props)},
        **extra,
    )


def test_the_description_glosses_an_unknown_name_verb() -> None:
    append = _tool("append_insight", "Add a business insight to the memo")
    assert classify_operation(append) == ("create", "append")
    # Third person and a removal read the same way.
    drop = _tool("scrub_insight", "Removes an insight from the memo.")
    assert classify_operation(drop) == ("delete", "scrub")
    g = description_gloss(append)
    assert g is not None and (g.verb, g.obj, g.place) == (
        "add", ["business", "insight"], ["to", "the", "memo"],
    )  # fmt: skip


def test_hostile_glosses_decide_nothing() -> None:
    # The description's verb acts on something the name does not name.
    assert glossed_write(_tool("shift_date", "Add days to a date"), ["shift", "date"]) is None
    assert glossed_write(_tool("append_row", "Add a business insight"), ["append", "row"]) is None
    # Generated output is handed back, not kept ("Generate a summary of a report").
    gen = _tool("report_summary", "Generates a summary of a report", {"id": {"type": "string"}})
    assert glossed_write(gen, ["report", "summary"]) is None
    # "Adds the tweet to bookmarks" given the tweet's id: an existing record put somewhere.
    ids = {"tweet_id": {"type": "string"}, "folder_id": {"type": "string"}}
    mark = _tool("bookmark_tweet", "Adds the tweet to bookmarks", ids)
    assert glossed_write(mark, ["bookmark", "tweet"]) is None
    # A one-word name has no noun to match; an empty or verbless description glosses nothing.
    assert glossed_write(_tool("append", "Add an insight"), ["append"]) is None
    assert glossed_write(_tool("append_insight", ""), ["append", "insight"]) is None
    assert description_gloss(_tool("x_insight", "Insight added to the memo")) is None
    # The server declares it read-only: no write, whatever the prose says.
    ro = _tool("append_insight", "Add an insight", annotations={"readOnlyHint": True})
    assert classify_operation(ro)[0] not in {"create", "update", "delete"}
    # A name whose own verb is known keeps it ("Add ..." does not turn a listing into a create).
    assert classify_operation(_tool("list_insights", "Add insights to a page"))[0] == "list"


def _server(spec: MCPSpec) -> str:
    a = analyze_programmatic(spec)
    m = schema_programmatic(spec, a)
    cs, _, _ = contracts(spec, a, m)
    plan, _ = backend(spec, m, cs)
    return render_server(spec, m, plan)


def test_a_create_confirms_itself_unless_an_output_is_documented() -> None:
    plain = MCPSpec(
        name="memo", tools=[_tool("append_insight", "Add a business insight to the memo")]
    )
    assert "'message': 'Business insight added to the memo'" in _server(plain)
    # Without a leading verb the name says what was done.
    named = MCPSpec(name="memo", tools=[_tool("create_insight", "An insight for the memo")])
    assert "'message': 'Insight created successfully'" in _server(named)
    out = {"type": "object", "properties": {"insight": {"type": "string"}}}
    documented = MCPSpec(
        name="memo", tools=[_tool("create_insight", "Add an insight", output_schema=out)]
    )
    # The route adds no confirmation; the documented response has no field for one.
    route = _server(documented).split("def tool_create_insight(", 1)[1].split("ROUTES[", 1)[0]
    assert "'message'" not in route
    # An entity called `message` keeps its own key; the confirmation goes beside it.
    msg = {"text": {"type": "string"}}
    send = MCPSpec(name="chat", tools=[_tool("send_message", "Send a message to the room", msg)])
    assert "'confirmation': 'Message sent to the room'" in _server(send)
    assert write_confirmation(_tool("x", "")) is None
