"""Record-graph semantics (graphsem + the bundle runtime graphrt): read from whole definitions, no
tool name matched; hostile definitions that must not be taken for a record graph."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth._internal import words as W
from weft_envsynth.graphsem import confirmation, graph_tool_set

S = {"type": "string"}
STRS = {"type": "array", "items": {"type": "string"}}
RO = {"readOnlyHint": True}
RW = {"readOnlyHint": False, "destructiveHint": False}
DEL = {"readOnlyHint": False, "destructiveHint": True}


def _tool(
    name: str,
    desc: str,
    props: dict[str, Any],
    ann: Any = None,
    out: dict[str, Any] | None = None,
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": list(props)},
        output_schema={"type": "object", "properties": out} if out else None,
        annotations=ann,
    )


def _arr(props: dict[str, Any], desc: str = "") -> dict[str, Any]:
    return {
        "type": "array",
        "description": desc,
        "items": {"type": "object", "properties": props, "required": list(props)},
    }


PERSON = {"name": S, "role": S, "facts": STRS}
LINK = {
    "source": {"type": "string", "description": "The name of the person where the link starts"},
    "target": {"type": "string", "description": "The name of the person where the link ends"},
    "kind": S,
}
FACTS = {"personName": {"type": "string", "description": "Who gets them"}, "items": STRS}
VIEW = {"people": _arr(PERSON), "links": _arr(LINK)}
CONFIRM = {"ok": {"type": "boolean"}, "message": S}

# A contact book with people, links and facts: nothing here is named like the memory server.
BOOK = MCPSpec(
    name="book",
    tools=[
        _tool("register_people", "Register people in the book", {"people": _arr(PERSON)}, RW),
        _tool("link_people", "Link people together", {"links": _arr(LINK)}, RW),
        _tool("append_facts", "Append facts to people", {"facts": _arr(FACTS)}, RW),
        _tool(
            "erase_people",
            "Erase people and every link that names them",
            {"personNames": {**STRS, "description": "Names of the people to erase"}},
            DEL,
            CONFIRM,
        ),
        _tool("unlink_people", "Remove links", {"links": _arr(LINK)}, DEL, CONFIRM),
        _tool("dump_book", "Everything in the book", {}, RO, VIEW),
        _tool("query_book", "Find people", {"query": S}, RO, VIEW),
        _tool("fetch_people", "Fetch people", {"names": STRS}, RO, VIEW),
    ],
)


def test_kinds_and_verbs_come_from_schemas_and_descriptions() -> None:
    g = graph_tool_set(BOOK)
    person, link = g.kind("person"), g.kind("link")
    assert person is not None and person.key == ["name"] and person.lists == ["facts"]
    assert link is not None and link.refs == {"source": "person", "target": "person"}
    verbs = {n: (s.verb, s.kind) for n, s in g.tools.items()}
    assert verbs == {
        "register_people": ("create", "person"),
        "link_people": ("create", "link"),
        "append_facts": ("append", "person"),
        "erase_people": ("delete", "person"),
        "unlink_people": ("delete_match", "link"),
        "dump_book": ("read_all", None),
        "query_book": ("search", None),
        "fetch_people": ("open", None),
    }
    assert g.tools["append_facts"].target_list == "facts"
    # "... and every link that names them": links go with the people they name.
    assert g.tools["erase_people"].cascade == ["link"]


def test_undeclared_annotations_and_terse_descriptions() -> None:
    # Scraped definitions: no annotations, links described as "Source person name".
    terse = {
        "from": {"type": "string", "description": "Source person name"},
        "to": {"type": "string", "description": "Target person name"},
        "kind": S,
    }
    spec = MCPSpec(
        name="scraped",
        tools=[
            _tool("create_people", "Create people", {"people": _arr(PERSON)}),
            _tool("create_links", "Create links", {"links": _arr(terse)}),
            _tool("update_links", "Update existing links", {"links": _arr(terse)}),
            _tool("open_people", "Open people by name", {"names": STRS}),
            _tool("read_people", "Read all people", {"dummy": S} | {}),
            _tool("show_book_path", "Return the path of the people file", {}),
        ],
    )
    spec.tools[4].input_schema["required"] = []  # a placeholder argument, not required
    g = graph_tool_set(spec)
    assert g.kind("link") is not None and g.kind("link").refs == {"from": "person", "to": "person"}  # type: ignore[union-attr]
    verbs = {n: s.verb for n, s in g.tools.items()}
    # `open` with nothing to write is a read; an update is no create; a path is not the records.
    assert verbs == {
        "create_people": "create",
        "create_links": "create",
        "open_people": "open",
        "read_people": "read_all",
    }


def test_hostile_definitions_are_not_a_record_graph() -> None:
    # Items without a name field and no links: rows of something, not named records.
    rows = MCPSpec(
        name="rows",
        tools=[
            _tool("add_rows", "Add rows", {"rows": _arr({"a": S, "b": S})}, RW),
            _tool("remove_rows", "Remove rows", {"rows": _arr({"a": S, "b": S})}, DEL),
            _tool("dump_rows", "All rows", {}, RO),
        ],
    )
    assert graph_tool_set(rows).tools == {}
    # A "create" the server declares read-only creates nothing: no kind, no graph.
    ro = MCPSpec(
        name="ro",
        tools=[
            _tool("create_people", "Create people", {"people": _arr(PERSON)}, RO),
            _tool("dump_book", "Everything", {}, RO),
            _tool("fetch_people", "Fetch", {"names": STRS}, RO),
        ],
    )
    assert graph_tool_set(ro).tools == {}
    # Written but never read back (two tools): not enough evidence for a store.
    two = MCPSpec(name="two", tools=BOOK.tools[:2])
    assert graph_tool_set(two).tools == {}
    # An edit list pairs texts, not records: a file editor is no record graph.
    edits = {"oldText": S, "newText": S}
    editor = MCPSpec(
        name="ed",
        tools=[
            _tool("edit_file", "Edit", {"path": S, "edits": _arr(edits)}, DEL),
            _tool("read_file", "Read", {"path": S}, RO),
            _tool("list_directory", "List", {"path": S}, RO),
        ],
    )
    assert graph_tool_set(editor).tools == {}
    # Reads that are not about the records (a web search, a health check) stay out of the graph,
    # though they are read-only, argument-free or take a query.
    extra = [
        _tool("web_search", "Search the web for pages", {"query": S}, RO),
        _tool("check_health", "Is the server up", {}, RO),
    ]
    g = graph_tool_set(MCPSpec(name="book2", tools=[*BOOK.tools, *extra]))
    assert "web_search" not in g.tools and "check_health" not in g.tools
    assert g.tools["dump_book"].verb == "read_all"  # its documented output lists the records


def test_confirmation_message_from_the_name() -> None:
    # the verb in the past tense and what it acted on.
    assert confirmation(BOOK.tool("erase_people")) == "People erased successfully"
    assert confirmation(_tool("delete_entities", "", {})) == "Entities deleted successfully"
    assert W.past("write") == "wrote" and W.past("copy") == "copied" and W.past("stop") == "stopped"


@pytest.fixture(scope="module")
def book_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_envsynth import synthesize_spec

    res = synthesize_spec(BOOK, tmp_path_factory.mktemp("book"))
    assert res.bundle is not None and res.status == "certified", res.uncertified
    return Path(res.bundle)


def _run(
    bundle: Path,
    tmp: Path,
    steps: list[tuple[str, dict[str, Any]]],
    document: dict[str, Any] | None = None,
) -> list[Any]:
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth.loader import import_bundle, unload_bundle

    db, ws = tmp / "state.sqlite", tmp / "ws"
    ws.mkdir(exist_ok=True)
    shutil.copyfile(bundle / "seed.sqlite", db)
    if document is not None:
        from weft_envsynth import import_state

        out_report = import_state(bundle, document, db_path=db, workspace=ws)
        assert out_report.rows == document["expect_rows"], out_report
        assert sorted(out_report.not_imported) == sorted(document["expect_not_imported"])
    mod = import_bundle(bundle)
    out: list[Any] = []

    async def go() -> None:
        with bind_session(SessionBinding(session_id=f"g-{tmp.name}", db_path=db, workspace=ws)):
            async with Client(mod.create_server()) as c:
                for name, args in steps:
                    r = await c.call_tool(name, args, raise_on_error=False)
                    text = " ".join(getattr(x, "text", "") for x in r.content or [])
                    out.append(("error", text) if r.is_error else r.structured_content)

    try:
        asyncio.run(go())
    finally:
        release_session(f"g-{tmp.name}")
        unload_bundle(mod)
    rows = sqlite3.connect(db).execute("SELECT kind, body FROM weft_graph_record ORDER BY seq")
    out.append([(k, json.loads(b)) for k, b in rows])
    return out


def test_records_links_and_notes_behave_like_a_graph(book_bundle: Path, tmp_path: Path) -> None:
    ann = {"name": "ann", "role": "chef", "facts": ["cooks"]}
    bob = {"name": "bob", "role": "pilot", "facts": []}
    got = _run(
        book_bundle,
        tmp_path,
        [
            ("register_people", {"people": [ann, bob]}),
            ("register_people", {"people": [ann]}),  # exists: skipped, nothing new
            ("link_people", {"links": [{"source": "ann", "target": "bob", "kind": "knows"}]}),
            # both items name ann: both notes land (one record, not the last write)
            (
                "append_facts",
                {
                    "facts": [
                        {"personName": "ann", "items": ["bakes"]},
                        {"personName": "ann", "items": ["sings", "cooks"]},
                    ]
                },
            ),
            # a note on someone unknown refuses the whole batch: ann gets nothing either
            (
                "append_facts",
                {
                    "facts": [
                        {"personName": "ann", "items": ["x"]},
                        {"personName": "zed", "items": ["y"]},
                    ]
                },
            ),
            ("fetch_people", {"names": ["nobody"]}),  # unknown names: an empty view, no error
            ("query_book", {"query": "SINGS"}),
            ("erase_people", {"personNames": ["bob"]}),
            ("dump_book", {}),
        ],
    )
    created, again, _link, appended, refused, empty, found, forgot, dump, rows = got
    assert created == {"people": [ann, bob]} and again == {"people": []}
    assert appended["results"][0] == {"personName": "ann", "items": ["bakes"]}
    assert appended["results"][1] == {"personName": "ann", "items": ["sings"]}
    assert refused[0] == "error" and "zed" in refused[1]
    assert empty == {"people": [], "links": []}
    assert [p["name"] for p in found["people"]] == ["ann"]
    # The documented flag and message of a confirmation.
    assert forgot == {"ok": True, "message": "People erased successfully"}
    # bob is gone and so is the link naming him (the description says so).
    assert dump == {"people": [{**ann, "facts": ["cooks", "bakes", "sings"]}], "links": []}
    assert [k for k, _ in rows] == ["person"]


def test_state_import_fills_the_record_graph(book_bundle: Path, tmp_path: Path) -> None:
    ann = {"name": "ann", "role": "chef", "facts": ["cooks"]}
    document = {
        "people": [ann, {"name": 3}, {"name": "cy", "role": "x", "facts": [1], "age": 9}],
        "link": [{"source": "ann", "target": "cy", "kind": "knows"}],
        "expect_rows": {"person": 2, "link": 1},
        "expect_not_imported": [
            "people[1]: needs name (strings)",
            "people[2].age: person has no field for it",
            "people[2].facts: not a list of strings",
            "expect_rows: no entity or workspace tree matches this key",
            "expect_not_imported: no entity or workspace tree matches this key",
        ],
    }
    got = _run(book_bundle, tmp_path, [("dump_book", {})], document)
    assert got[0] == {
        "people": [ann, {"name": "cy", "role": "x", "facts": []}],
        "links": [{"source": "ann", "target": "cy", "kind": "knows"}],
    }
