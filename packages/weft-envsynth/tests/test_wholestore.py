"""Whole-store reads (`read_graph`): an argument-free read of a store returns every entity the
tool set writes, not filler rows of an entity of its own."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth.analyze import analyze_programmatic, whole_store_read
from weft_envsynth.schema import schema_programmatic


def _tool(name: str, desc: str, props: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": required},
    )


ITEMS = {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
GRAPH = MCPSpec(
    name="memory",
    tools=[
        _tool("create_entities", "Create entities", {"entities": ITEMS}, ["entities"]),
        _tool("create_relations", "Create relations", {"relations": ITEMS}, ["relations"]),
        _tool("read_graph", "Read the entire knowledge graph", {}, []),
    ],
)


# Items without a name: no named records (graphsem), so the whole-store rule decides.
LABELS = {"type": "array", "items": {"type": "object", "properties": {"label": {"type": "string"}}}}
STORE = MCPSpec(
    name="store",
    tools=[
        _tool("create_entities", "Create entities", {"entities": LABELS}, ["entities"]),
        _tool("create_relations", "Create relations", {"relations": LABELS}, ["relations"]),
        _tool("read_graph", "Read the entire knowledge graph", {}, []),
    ],
)


def _model(spec: MCPSpec) -> Any:
    return schema_programmatic(spec, analyze_programmatic(spec))


def test_only_argument_free_reads_of_a_store_noun_read_everything() -> None:
    from weft_envsynth.graphsem import graph_tool_set

    # Named items are records of a graph (graphsem serves them); unnamed ones are rows.
    assert graph_tool_set(GRAPH).tools and not graph_tool_set(STORE).tools
    model = _model(STORE)
    ops = {e.tool: (e.operation, e.entity) for e in analyze_programmatic(STORE).tools}
    op, ent = ops["read_graph"]
    assert whole_store_read(STORE.tool("read_graph"), op, ent, model) == ["entity", "relation"]
    # A required argument, or a noun that is not a store, keeps the ordinary route.
    q = _tool("read_graph", "Read", {"q": {"type": "string"}}, ["q"])
    assert whole_store_read(q, op, ent, model) == []
    assert whole_store_read(_tool("list_products", "List", {}, []), "list", ent, model) == []
    # Hostile: the noun names a written entity, or an entity the model does not have.
    assert whole_store_read(STORE.tool("read_graph"), "read", "entity", model) == []
    assert whole_store_read(STORE.tool("read_graph"), "read", "nowhere", model) == []
    # A write tool is never a whole-store read, whatever its name.
    assert whole_store_read(_tool("save_state", "", {}, []), "create", ent, model) == []


def test_read_graph_returns_what_was_written(tmp_path: Path) -> None:
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth import synthesize_spec
    from weft_envsynth.loader import import_bundle, unload_bundle

    res = synthesize_spec(GRAPH, tmp_path / "out")
    assert res.bundle is not None and res.status == "certified", res.uncertified
    bundle = Path(res.bundle)
    db = tmp_path / "s.sqlite"
    shutil.copyfile(bundle / "seed.sqlite", db)
    mod = import_bundle(bundle)
    got: list[Any] = []

    async def go() -> None:
        with bind_session(SessionBinding(session_id="t-graph", db_path=db, workspace=tmp_path)):
            async with Client(mod.create_server()) as c:
                before = await c.call_tool("read_graph", {})
                await c.call_tool("create_entities", {"entities": [{"name": "ada"}]})
                await c.call_tool("create_relations", {"relations": [{"name": "knows"}]})
                after = await c.call_tool("read_graph", {})
                got.extend([before.structured_content, after.structured_content])

    try:
        asyncio.run(go())
    finally:
        release_session("t-graph")
        unload_bundle(mod)
    before, after = got
    assert len(after["entities"]) == len(before["entities"]) + 1
    assert len(after["relations"]) == len(before["relations"]) + 1
    assert "ada" in str(after["entities"]) and "knows" in str(after["relations"])
