"""Results shaped like the documented response (weft_envsynth.responses + the bundle runtime
shapert): every documented field, from what the call touched, in the documented names and types;
the documented-fields probe fails a tool whose answer lacks one."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth._internal.behaviourchecks import documented_problems
from weft_envsynth._templates.shapert import coerce, shaped
from weft_envsynth.plans import ADVISORY_CHECKS
from weft_envsynth.responses import documents_records, resolve_response

S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741
N = {"type": "number"}
B = {"type": "boolean"}


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def arr(items: Any) -> dict[str, Any]:
    return {"type": "array", "items": items}


TWEET = {"tweet_id": 7, "username": "tech_guru", "content": "hi", "tags": ["#a"], "mentions": []}


def shape(
    schema: Any, *, entity: str = "tweet", key: str = "tweet_id", **kw: Any
) -> dict[str, Any]:
    return {"schema": schema, "entity": entity, "key": key, **kw}


# ------------------------------------------------------------------------------ runtime rules


def test_a_record_answers_the_documented_fields_key_as_id() -> None:
    doc = obj(id=I, username=S, content=S, tags=arr(S), mentions=arr(S))
    got = shaped({"tweet": TWEET}, {"content": "hi"}, shape(doc))
    assert list(got)[:5] == ["id", "username", "content", "tags", "mentions"]
    assert got["id"] == 7 and got["username"] == "tech_guru" and got["tags"] == ["#a"]
    assert got["tweet"] == TWEET  # the route's own record follows


def test_names_spelled_alike_and_qualified_match_the_record() -> None:
    doc = obj(currentSpeed=N, new_balance=N, card_balance=N, deleted_status=B)
    row = {"id": "ACC-1", "current_speed": 42, "balance": 10.5}
    got = shaped({"account": row, "deleted": True}, {}, shape(doc, entity="account", key="id"))
    assert got["currentSpeed"] == 42.0 and got["new_balance"] == 10.5
    assert got["card_balance"] == 10.5 and got["deleted_status"] is True


def test_a_listing_fills_the_documented_array_of_objects_empty_when_none() -> None:
    doc = obj(matching_tweets=arr(obj(id=I, content=S)))
    page = {"items": [TWEET, {**TWEET, "tweet_id": 8, "content": "yo"}], "count": 2, "total": 2}
    got = shaped(page, {"keyword": "hi"}, shape(doc))
    assert [t["id"] for t in got["matching_tweets"]] == [7, 8]
    assert got["matching_tweets"][1]["content"] == "yo"
    empty = shaped({"items": [], "count": 0, "total": 0}, {}, shape(doc))
    assert empty["matching_tweets"] == []


def test_a_list_of_scalars_is_the_column_callers_name_else_a_named_key() -> None:
    rows = {"items": [{"watchlist_id": "WAT-0001", "stock": "NVDA"}], "count": 1, "total": 1}
    doc = obj(watchlist=arr(S))
    made_up_key = shape(doc, entity="watchlist", key="watchlist_id", labels=["stock"])
    assert shaped(rows, {}, made_up_key)["watchlist"] == ["NVDA"]
    orders = {"items": [{"order_id": 12446, "symbol": "TSLA"}], "count": 1, "total": 1}
    named = shape(
        obj(order_history=arr(I)), entity="order", key="order_id", key_named=True, labels=["symbol"]
    )
    assert shaped(orders, {}, named)["order_history"] == [12446]
    # One record a write touched is a list of one.
    one = shaped({"watchlist": rows["items"][0]}, {"stock": "NVDA"}, made_up_key)
    assert one["watchlist"] == ["NVDA"]


def test_documented_wrappers_around_the_record() -> None:
    row = {"id": "M-1", "received_count": 3, "total_contacts": 2}
    got = shaped(
        {"stat": row},
        {},
        shape(obj(stats=obj(received_count=I, total_contacts=I)), entity="stat", key="id"),
    )
    assert got["stats"] == {"received_count": 3, "total_contacts": 2}
    wrapped = shaped({"tweet": TWEET}, {}, shape(obj(result=obj(id=I, content=S))))
    assert wrapped["result"]["id"] == 7 and wrapped["result"]["content"] == "hi"
    # A free-form object is the record the call touched; nothing when it touched none.
    free = shape(obj(messages={"type": "object"}), entity="sent", key="id")
    assert shaped({"sent": row}, {}, free)["messages"] == row
    assert shaped({"deleted": True}, {}, free)["messages"] is None
    items = shaped({"items": [TWEET]}, {}, shape(obj(items=arr(obj(id=I)), count=I)))
    assert items["items"][0]["id"] == 7 and items["count"] is None


def test_a_write_confirms_a_read_invents_nothing() -> None:
    doc = obj(added_status=B, user_id=S, message=S, login_status=B)
    row = {"user_id": "USR-1", "user_name": "Ann"}
    write = shape(doc, entity="user", key="user_id", write=True, message="Contact added")
    got = shaped({"user": row}, {"user_name": "Ann"}, write)
    assert got["added_status"] is True and got["user_id"] == "USR-1"
    assert got["message"] == "Contact added"
    read = shaped({"user": row}, {}, shape(doc, entity="user", key="user_id"))
    assert read["added_status"] is None and read["message"] is None and read["user_id"] == "USR-1"


def test_documented_scalar_responses_are_answered_in_their_type() -> None:
    write = {"write": True, "message": "Ticket created"}
    assert shaped({"ticket": {"id": 3}}, {}, shape(S, entity="ticket", key="id", **write)) == (
        "Ticket created"
    )
    assert shaped({"deleted": True, "id": 3}, {}, shape(B, entity="ticket", key="id")) is True
    total = shaped({"items": [], "count": 0, "total": 12}, {}, shape(I, entity="t", key="id"))
    assert total == 0  # the page's count, an integer
    assert shaped({"items": [TWEET]}, {}, shape(arr(obj(id=I)))) == [{**TWEET, "id": 7}]


def test_values_take_the_documented_type_where_nothing_is_lost() -> None:
    assert coerce("3", I) == 3 and coerce(2.0, I) == 2 and coerce("2.5", N) == 2.5
    assert (
        coerce(7, S) == "7"
        and coerce(["a"], S) == ["a"]
        and coerce("true", B) is True
        and coerce("[1]", arr(I)) == [1]
    )
    assert coerce("TIC-0001", I) == "TIC-0001"  # not a number: kept, the probe reports it
    assert coerce("x", {"type": ["string", "integer"]}) == "x"  # contradictory: unchanged
    assert coerce(True, I) is True


def test_hostile_documented_responses_never_crash_the_answer() -> None:
    raw = {"tweet": TWEET}
    for doc in (
        {"type": "object", "properties": "x"},  # properties not an object
        {"type": 5},
        {"type": "object", "properties": {"id": "integer", "n": None}},  # sub-schemas not objects
        {"type": ["integer", "string"]},  # contradictory top type
        obj(
            deep=obj(deeper=obj(deepest=obj(x=obj(y=obj(z=obj(w=obj(v=I)))))))
        ),  # past the depth cap
    ):
        got = shaped(raw, {}, shape(doc))
        assert isinstance(got, dict) and got.get("tweet") == TWEET, doc
    assert shaped(raw, {}, shape(obj(id=I)))["id"] == 7


def test_fifty_documented_fields_all_answered_in_order() -> None:
    doc = obj(**{f"field_{i}": I for i in range(50)})
    row = {"id": 1, **{f"field_{i}": str(i) for i in range(0, 50, 2)}}
    got = shaped({"rec": row}, {}, shape(doc, entity="rec", key="id"))
    assert list(got)[:50] == [f"field_{i}" for i in range(50)]
    assert got["field_48"] == 48 and got["field_49"] is None


# ------------------------------------------------------------------------------ definitions


def _tool(out: Any) -> ToolSpec:
    return ToolSpec(name="get_ticket", input_schema=obj(ticket_id=S), output_schema=out)


def test_references_are_inlined_undefined_ones_reported_in_one_line() -> None:
    out = {
        "type": "object",
        "properties": {"ticket": {"$ref": "#/$defs/Ticket"}, "owner": {"$ref": "#/$defs/Nope"}},
        "$defs": {"Ticket": obj(id=I, parent={"$ref": "#/$defs/Ticket"})},
    }
    schema, notes = resolve_response(_tool(out))
    assert schema is not None and "$defs" not in schema
    assert schema["properties"]["ticket"]["properties"]["id"] == I
    assert schema["properties"]["owner"] == {}
    assert notes == [
        "get_ticket: documented response refers to undefined type '#/$defs/Nope'; "
        "that part is left untyped"
    ]
    assert resolve_response(_tool({"$ref": "#/definitions/Undefined"}))[0] == {}
    assert resolve_response(_tool(None)) == (None, [])


def test_the_probe_reads_the_answer_not_the_record() -> None:
    tool = _tool(obj(id=I, title=S))
    tool.output_schema = {**obj(id=I, title=S), "required": ["id"]}
    # On main the record's fields counted; the caller reads the top of the answer.
    assert documented_problems(tool, {"ticket": {"id": 1, "title": "x"}}) == [
        "id missing",
        "title missing",
    ]
    assert documented_problems(tool, {"id": None, "title": "x"}) == ["id is null but required"]
    assert documented_problems(tool, {"id": "T-1", "title": None}) == [
        "type: id is str, not integer"
    ]
    assert documented_problems(_tool(S), {"result": "ok"}) == []
    assert documented_problems(_tool(S), {"ticket": {}}) == [
        "the answer is not the documented string"
    ]
    assert documented_problems(_tool({"type": "object", "properties": "x"}), {}) == []
    assert "behaviour_documented_fields" not in ADVISORY_CHECKS
    assert documents_records(_tool(obj(watchlist=arr(S)))) and not documents_records(_tool(obj()))


# ------------------------------------------------------------------------------ whole bundles

DESK = MCPSpec(
    name="desk",
    tools=[
        ToolSpec(
            name="create_ticket",
            description="Create a ticket",
            input_schema={**obj(title=S, priority=I), "required": ["title"]},
            output_schema=obj(id=S, title=S, priority=I, status=S),
        ),
        ToolSpec(
            name="get_ticket",
            description="Get a ticket",
            input_schema={**obj(ticket_id=S), "required": ["ticket_id"]},
            output_schema={
                "type": "object",
                "properties": {"result": {"$ref": "#/$defs/T"}},
                "$defs": {"T": obj(id=S, title=S)},
            },
        ),
        ToolSpec(
            name="search_tickets",
            description="Search tickets by keyword",
            input_schema={**obj(keyword=S), "required": ["keyword"]},
            output_schema=obj(matching_tickets=arr(obj(id=S, title=S))),
        ),
        # BFCL TradingBot's watchlist: a write and an argument-free read, both documenting
        # the list of symbols.
        ToolSpec(
            name="add_to_watchlist",
            description="Add a stock to the watchlist.",
            input_schema={**obj(stock=S), "required": ["stock"]},
            output_schema=obj(watchlist=arr(S)),
        ),
        ToolSpec(
            name="get_watchlist",
            description="Get the watchlist.",
            input_schema=obj(),
            output_schema=obj(watchlist=arr(S)),
        ),
    ],
)


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_envsynth import synthesize_spec

    res = synthesize_spec(DESK, tmp_path_factory.mktemp("desk"))
    assert res.bundle is not None and res.status == "certified", res.uncertified
    return Path(res.bundle)


def _run(bundle: Path, tmp: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth.loader import import_bundle

    db, ws = tmp / "state.sqlite", tmp / "workspace"
    shutil.copyfile(bundle / "seed.sqlite", db)
    ws.mkdir()
    out: list[Any] = []

    async def go() -> None:
        with bind_session(SessionBinding(session_id=f"r-{tmp.name}", db_path=db, workspace=ws)):
            async with Client(import_bundle(bundle).create_server()) as c:
                for name, args in calls:
                    r = await c.call_tool(name, args, raise_on_error=False)
                    assert not r.is_error, r.content
                    out.append(r.structured_content)

    try:
        asyncio.run(go())
    finally:
        release_session(f"r-{tmp.name}")
    return out


def test_a_bundle_answers_every_documented_field_from_its_state(desk: Path, tmp_path: Path) -> None:
    created, read, found, added, watched = _run(
        desk,
        tmp_path,
        [
            ("create_ticket", {"title": "Printer zebra jam", "priority": 2}),
            ("get_ticket", {"ticket_id": "TIC-0001"}),
            # Punctuation around a word is not part of it: the ticket matches (main: no match).
            ("search_tickets", {"keyword": "zebra?"}),
            ("add_to_watchlist", {"stock": "OMEG"}),
            ("get_watchlist", {}),
        ],
    )
    assert list(created)[:4] == ["id", "title", "priority", "status"]
    assert created["title"] == "Printer zebra jam" and created["priority"] == 2
    assert isinstance(created["id"], str) and created["id"]
    assert read["result"]["id"] == "TIC-0001" and read["result"]["title"]
    assert [t["id"] for t in found["matching_tickets"]] == [created["id"]]
    # An argument-free read documenting a list answers every record, the new one too.
    # The symbol callers name, not the key the bundle made up (`WAT-0007`).
    assert added["watchlist"] == ["OMEG"]
    assert "OMEG" in watched["watchlist"] and len(watched["watchlist"]) > 1
    assert not any(str(w).startswith("WAT-") for w in watched["watchlist"])
    validation = json.loads((desk / "validation.json").read_text())
    checks = validation["rounds"][-1]["checks"]
    probe = {
        c["tool"] for c in checks if c["name"] == "behaviour_documented_fields" and c["passed"]
    }
    assert "create_ticket" in probe


def test_query_words_drop_edge_punctuation() -> None:
    from weft_envsynth._templates.runtime import query_words

    assert query_words('"Zebra," jam? a (x)') == ["zebra", "jam"]
    assert query_words("c++") == ["c++"] and query_words("?!") == []


def test_the_probe_fails_a_bundle_that_does_not_shape(desk: Path, tmp_path: Path) -> None:
    # The bundle as main served it: the route's own answer, no documented fields.
    from weft_core.models import ContractSet, EntityModel
    from weft_envsynth.validate import validate

    work = tmp_path / "b"
    shutil.copytree(desk, work)
    (work / "manifest.json").unlink()
    src = (work / "server.py").read_text()
    (work / "server.py").write_text(src.replace("certified_tools(), SHAPES)", "certified_tools())"))
    model = EntityModel.model_validate_json((work / "entities.json").read_text())
    cs = ContractSet.model_validate_json((work / "contracts.json").read_text())
    report = validate(work, DESK, model, cs)
    failing = report.failing_tools()
    assert "create_ticket" in failing
    assert any(c.name == "behaviour_documented_fields" for c in failing["create_ticket"])
