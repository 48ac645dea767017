"""MCP tool annotations in the analysis (readOnlyHint, idempotentHint) and absolute workspace
paths, as real MCP servers declare and use them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth.analyze import annotation, classify_operation, idempotent_delete
from weft_envsynth.backend import backend, render_server
from weft_envsynth.contracts import contracts
from weft_envsynth.schema import schema_programmatic


def _tool(name: str, props: dict[str, Any], required: list[str], ann: Any = None) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=f"{name.replace('_', ' ')} in the knowledge graph",
        input_schema={"type": "object", "properties": props, "required": required},
        annotations=ann,
    )


NAMES = {"names": {"type": "array", "items": {"type": "string"}}}


def test_read_only_hint_overrides_a_write_verb_in_the_name() -> None:
    # `open` is a create verb by name; the server says the tool changes nothing.
    assert classify_operation(_tool("open_nodes", NAMES, ["names"]))[0] == "create"
    ro = _tool("open_nodes", NAMES, ["names"], {"readOnlyHint": True})
    assert classify_operation(ro)[0] == "read"
    snake = _tool("open_nodes", NAMES, ["names"], {"read_only_hint": True})
    assert classify_operation(snake)[0] == "read"
    q = {"query": {"type": "string"}}
    assert classify_operation(_tool("create_search", q, ["query"], {"readOnlyHint": True}))[0] == (
        "search"
    )
    assert classify_operation(_tool("add_view", {}, [], {"readOnlyHint": True}))[0] == "list"


@pytest.mark.parametrize(
    "ann",
    [
        {"readOnlyHint": "yes"},  # not a boolean: decides nothing
        {"readOnlyHint": None},
        ["readOnlyHint"],  # not an object at all
        {"readOnlyHint": False, "destructiveHint": "maybe"},
        {"readOnlyHint": 1},
    ],
)
def test_hostile_annotations_decide_nothing(ann: Any) -> None:
    tool = _tool("create_note", {"text": {"type": "string"}}, ["text"], None)
    tool.annotations = ann  # bypasses the loader, as a hand-built spec could
    assert annotation(tool, "readOnlyHint") in (None, False)
    assert classify_operation(tool)[0] == "create"


def test_contradictory_annotations_read_only_wins_over_destructive() -> None:
    tool = _tool("delete_nodes", NAMES, ["names"], {"readOnlyHint": True, "destructiveHint": True})
    assert classify_operation(tool)[0] == "read"
    assert not idempotent_delete(tool, classify_operation(tool)[0])


def _memory_spec(idempotent: bool) -> MCPSpec:
    key = {"note_id": {"type": "string", "description": "The note's id"}}
    ann = {"destructiveHint": True, "idempotentHint": idempotent}
    return MCPSpec(
        name="notes",
        tools=[
            _tool("create_note", {"title": {"type": "string"}}, ["title"]),
            _tool("get_note", key, ["note_id"], {"readOnlyHint": True}),
            _tool("delete_note", key, ["note_id"], ann),
        ],
    )


def _server(spec: MCPSpec) -> str:
    from weft_envsynth.analyze import analyze_programmatic

    a = analyze_programmatic(spec)
    m = schema_programmatic(spec, a)
    cs, _, _ = contracts(spec, a, m)
    plan, _ = backend(spec, m, cs)
    return render_server(spec, m, plan)


def test_idempotent_delete_of_what_is_gone_succeeds_in_the_rendered_backend() -> None:
    src = _server(_memory_spec(True))
    body = src[src.index("def tool_delete_note") :].split("\nROUTES")[0]
    assert "except ToolFailure as exc:" in body and "'deleted': False" in body
    compile(src, "server.py", "exec")
    plain = _server(_memory_spec(False))
    body = plain[plain.index("def tool_delete_note") :].split("\nROUTES")[0]
    assert "except ToolFailure" not in body


def test_idempotent_delete_is_certified_and_behaves(tmp_path: Path) -> None:
    import asyncio
    import shutil

    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth import synthesize_spec
    from weft_envsynth.loader import import_bundle, unload_bundle

    res = synthesize_spec(_memory_spec(True), tmp_path / "out")
    assert res.bundle is not None and res.status == "certified", res.uncertified
    bundle = Path(res.bundle)
    db, ws = tmp_path / "s.sqlite", tmp_path / "ws"
    shutil.copyfile(bundle / "seed.sqlite", db)
    mod = import_bundle(bundle)
    got: list[tuple[bool, Any]] = []

    async def go() -> None:
        with bind_session(SessionBinding(session_id="t-idem", db_path=db, workspace=ws)):
            async with Client(mod.create_server()) as c:
                made = await c.call_tool("create_note", {"title": "x"})
                nid = made.structured_content["note"]["note_id"]
                for args in ({"note_id": nid}, {"note_id": nid}, {"note_id": "NOPE-1"}):
                    r = await c.call_tool("delete_note", args, raise_on_error=False)
                    got.append((bool(r.is_error), r.structured_content))
                r = await c.call_tool("get_note", {"note_id": nid}, raise_on_error=False)
                got.append((bool(r.is_error), None))

    try:
        asyncio.run(go())
    finally:
        release_session("t-idem")
        unload_bundle(mod)
    assert got[0] == (False, {"deleted": True, "note_id": got[0][1]["note_id"]})
    assert got[1][0] is False and got[1][1]["deleted"] is False
    assert got[2][0] is False and got[2][1]["deleted"] is False
    assert got[3][0] is True  # really gone


def test_absolute_paths_inside_the_workspace_name_the_workspace() -> None:
    from weft_envsynth._templates.runtime import _root_relative

    root = Path("/srv/session/ws")
    assert _root_relative(root, "/srv/session/ws/a/b.txt") == "/a/b.txt"
    assert _root_relative(root, "/srv/session/ws") == "/"
    assert _root_relative(root, "/srv/session/ws/") == "/"
    # A sibling folder that shares the prefix is not the workspace; relative names stay.
    assert _root_relative(root, "/srv/session/wsx/a") == "/srv/session/wsx/a"
    assert _root_relative(root, "notes.txt") == "notes.txt"
    # `..` after the root is still resolved (and refused) by resolve_in_workspace.
    assert _root_relative(root, "/srv/session/ws/../../etc") == "/../../etc"
