"""Examples in the definitions (schema `examples`/`example`/`default`, "e.g. TIC-0001" in prose)
reach entities.json and the seed, in their format; junk does not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from weft_core.models import Entity, EntityField, MCPSpec, ToolSpec
from weft_envsynth._internal.assemble import build_seed, write_sources
from weft_envsynth.analyze import analyze_programmatic
from weft_envsynth.backend import backend
from weft_envsynth.contracts import contracts
from weft_envsynth.examples import MAX_EXAMPLES, mentioned, schema_values, text_values, typed
from weft_envsynth.schema import schema_programmatic
from weft_envsynth.seed import field_value, seed_programmatic
from weft_envsynth.shapes import unique_column
from weft_envsynth.validate import validate


def _tool(name: str, props: dict, required: list[str] | None = None, desc: str = "") -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": required or []},
    )


def _desk() -> MCPSpec:
    s = {"type": "string"}
    return MCPSpec(
        name="desk",
        tools=[
            _tool(
                "create_ticket",
                {"subject": s, "priority": {"type": "string", "enum": ["low", "high"]}},
                ["subject"],
                "Open a new support ticket.",
            ),
            _tool(
                "get_ticket",
                {"ticket_id": {"type": "string", "description": "ID of the ticket, e.g. TIC-0001"}},
                ["ticket_id"],
                "Get a ticket.",
            ),
            _tool(
                "close_ticket",
                {"ticket_id": s},
                ["ticket_id"],
                "Close a ticket. ticket_id: the ticket to close (e.g. TIC-0042).",
            ),
            _tool(
                "create_order",
                {"item": s, "quantity": {"type": "integer", "description": "Units, e.g. abc"}},
                ["item"],
                "Place an order.",
            ),
            _tool(
                "get_order",
                {"order_id": {"type": "string", "description": "Order number (format: ORD-12345)"}},
                ["order_id"],
                "Look up an order.",
            ),
            _tool(
                "get_stock_quote",
                {"symbol": {"type": "string", "examples": ["AAPL", "MSFT"]}},
                ["symbol"],
                "Get the latest quote of a stock.",
            ),
        ],
    )


def _rows(spec: MCPSpec, entity: str) -> list[dict]:
    a = analyze_programmatic(spec)
    m = schema_programmatic(spec, a)
    return seed_programmatic(m, spec).rows[entity]


def test_seed_holds_the_examples_of_the_definitions() -> None:
    spec = _desk()
    a = analyze_programmatic(spec)
    ents = {e.name: e for e in a.entities}
    # The key gets what its id arguments give, from a parameter and from the tool description.
    assert ents["ticket"].field("ticket_id").examples == ["TIC-0001", "TIC-0042"]
    assert ents["order"].field("order_id").examples == ["ORD-12345"]
    quote = next(e for e in a.entities if "symbol" in {f.name for f in e.fields})
    assert quote.field("symbol").examples == ["AAPL", "MSFT"]
    # An integer field ignores "e.g. abc"; the enum stays the domain of `priority`.
    assert ents["order"].field("quantity").examples == []

    tickets = [r["ticket_id"] for r in _rows(spec, "ticket")]
    assert tickets[:2] == ["TIC-0001", "TIC-0042"]
    assert all(re.fullmatch(r"TIC-\d{4}", t) for t in tickets) and len(set(tickets)) == 6
    orders = [r["order_id"] for r in _rows(spec, "order")]
    assert orders[0] == "ORD-12345" and all(re.fullmatch(r"ORD-\d{5}", o) for o in orders)
    assert len(set(orders)) == len(orders)
    symbols = [r["symbol"] for r in _rows(spec, quote.name)]
    assert symbols[:2] == ["AAPL", "MSFT"]
    assert all(re.fullmatch(r"[A-Z]{4}", s) for s in symbols) and len(set(symbols)) > 2
    # Deterministic: the same spec seeds the same rows.
    assert [r["symbol"] for r in _rows(spec, quote.name)] == symbols


def test_bundle_seeded_from_examples_still_validates(tmp_path: Path) -> None:
    spec = _desk()
    a = analyze_programmatic(spec)
    m = schema_programmatic(spec, a)
    cs, _, _ = contracts(spec, a, m)
    plan, _ = backend(spec, m, cs)
    write_sources(tmp_path, spec, m, cs, plan, format_code=False)
    build_seed(tmp_path, seed_programmatic(m, spec))
    assert validate(tmp_path, spec, m, cs).failing_tools() == {}


def test_examples_merge_across_tools_and_enum_wins() -> None:
    spec = MCPSpec(
        name="market",
        tools=[
            _tool(
                "get_stock",
                {"stock_id": {"type": "string", "example": "STK-01"}},
                ["stock_id"],
                "Get a stock.",
            ),
            _tool(
                "update_stock",
                {
                    "stock_id": {"type": "string"},
                    "ticker": {"type": "string", "examples": ["AAPL"]},
                    "status": {
                        "type": "string",
                        "enum": ["listed", "delisted"],
                        "examples": ["listed", "bankrupt"],
                    },
                },
                ["stock_id"],
                "Update a stock.",
            ),
            _tool(
                "create_stock",
                {"ticker": {"type": "string", "description": "Ticker such as GOOG, TSLA"}},
                ["ticker"],
                "Add a stock.",
            ),
            _tool(
                "create_trade",
                {
                    "stock_id": {"type": "string"},
                    "trader_id": {"type": "string", "description": "The trader, e.g. TR-7"},
                },
                ["stock_id"],
                "Record a trade.",
            ),
        ],
    )
    a = analyze_programmatic(spec)
    stock = next(e for e in a.entities if e.name == "stock")
    assert stock.field("ticker").examples == ["AAPL", "GOOG", "TSLA"]
    assert stock.field("status").examples == ["listed"]
    assert stock.field(stock.key).examples == ["STK-01"]
    # A reference's examples are the referenced key's when it has none of its own.
    trader = next(e for e in a.entities if e.name == "trader")
    assert trader.field(trader.key).examples == ["TR-7"]
    # The enum wins in the seed too.
    rows = seed_programmatic(schema_programmatic(spec, a), spec).rows["stock"]
    assert {r["status"] for r in rows} <= {"listed", "delisted"}


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("ID of the ticket, e.g. TIC-0001", ["TIC-0001"]),
        ("Ticker symbol, for example 'AAPL'", ["AAPL"]),
        ("Airport code such as NYC, LAX", ["NYC", "LAX"]),
        ("Branch name, like `main`", ["main"]),
        ("Order number (format: ORD-12345)", ["ORD-12345"]),
        ("Currency (e.g., 'USD')", ["USD"]),
        ("City, e.g. New York, London or Paris.", ["New York", "London", "Paris"]),
        ("The id, e.g. TIC-0001 for the first ticket", ["TIC-0001"]),
        ("Name \u201cquoted\u201d e.g. \u201cM\u00fcnchen\u201d", ["M\u00fcnchen"]),
        ("Example: 42", ["42"]),
        # Prose, not values.
        ("Filters such as creating tickets", []),
        ("e.g. the id of the user", []),
        ("Works like a charm", []),
        ("Pick an example ticket", []),
        ("", []),
    ],
)
def test_text_examples(text: str, values: list[str]) -> None:
    assert text_values(text) == values


def test_hostile_examples_are_dropped() -> None:
    # Placeholders, sentences, nested objects, wrong types: nothing to seed.
    junk = ["<ticket_id>", "...", "xxx", "YOUR_API_KEY", "{id}", "The id of the ticket to close."]
    assert typed([*junk, {"a": 1}, ["x"], None, "", "  "], "string") == []
    assert typed(["12", "abc", 3.0, 2.5, True, float("nan"), "1e3"], "integer") == [12, 3]
    assert typed(["1.5", 2, "x", True], "number") == [1.5, 2]
    assert typed(["true", 0, "yes", False], "boolean") == [True, False]
    assert typed(["2024-01-15", "2024-13-01", "soon"], "date") == ["2024-01-15"]
    assert typed(["2024-01-15T10:00:00Z", "2024-01-15"], "datetime") == ["2024-01-15T10:00:00Z"]
    assert typed(["a", "b"], "json") == []
    assert typed(["open", "OPEN", "gone"], "string", ["open", "closed"]) == ["open"]
    assert typed(["A", "A", "B"], "string") == ["A", "B"]
    assert len(typed([f"T-{i}" for i in range(10_000)], "string")) == MAX_EXAMPLES
    # Non-list `examples`, OpenAPI named examples, huge lists, non-dict schemas.
    assert schema_values({"examples": "AAPL"}) == ["AAPL"]
    assert schema_values({"examples": {"a": {"value": "X-1"}, "b": 3}}) == ["X-1"]
    assert len(schema_values({"examples": list(range(100_000))})) <= 32
    assert schema_values("nonsense") == [] and schema_values({"default": {"a": 1}}) == []
    assert schema_values({"anyOf": [{"type": "string", "examples": ["Q"]}, {"type": "null"}]}) == [
        "Q"
    ]
    assert typed(text_values("e.g. `a` ` b` 'c" * 5000), "string") == ["a"]


def test_tool_description_gives_examples_only_where_it_names_the_argument_alone() -> None:
    t = _tool(
        "move",
        {"ticket_id": {}, "user_id": {}},
        desc="Moves a ticket.\nticket_id: e.g. TIC-9. Both ticket_id and user_id, e.g. 42.",
    )
    assert mentioned(t, "ticket_id") == ["TIC-9"]
    assert mentioned(t, "user_id") == []


def test_unique_values_stay_unique_and_in_format() -> None:
    # Examples that collide with the counting: TIC-0002 is an example, so it is not used twice.
    col = unique_column(["TIC-0001", "TIC-0002"], "string", 8, lambda k, a: _fake_for(k, a))
    assert col[:2] == ["TIC-0001", "TIC-0002"] and len(set(col)) == 8
    assert all(re.fullmatch(r"TIC-\d{4}", c) for c in col)
    assert unique_column([41, 7], "integer", 4, _fake_for) == [41, 7, 42, 43]
    # A one-letter code has 26 values: past them the values still differ.
    col = unique_column(["A"], "string", 40, _fake_for)
    assert len(set(col)) == 40
    words = unique_column(["main"], "string", 3, _fake_for)
    assert words[0] == "main" and len(set(words)) == 3


def test_field_value_formats_follow_the_examples() -> None:
    ent = Entity(name="thing", key="id", fields=[EntityField(name="id", primary_key=True)])

    def vals(f: EntityField) -> list:
        return [field_value(ent, f, i) for i in range(6)]

    mail = vals(EntityField(name="contact", examples=["jane@acme.io"]))
    assert mail[0] == "jane@acme.io" and all(m.endswith("@acme.io") for m in mail)
    days = vals(EntityField(name="due", type="date", examples=["2021-03-04"]))
    assert all(d.startswith(("2020-", "2021-")) for d in days)
    qty = vals(EntityField(name="qty", type="integer", examples=[10, 20]))
    assert qty[:2] == [10, 20] and all(10 <= q <= 20 for q in qty)
    price = vals(EntityField(name="price", type="number", examples=[9.99]))
    assert all(isinstance(p, float) and 4 < p < 15 for p in price)
    code = vals(EntityField(name="code", examples=["SKU-12-AB"]))
    assert all(re.fullmatch(r"SKU-\d\d-AB", c) for c in code)
    assert vals(EntityField(name="code", examples=["SKU-12-AB"])) == code  # deterministic


def _fake_for(row: int, attempt: int):
    from weft_envsynth.seed import _fake

    return _fake("test", "field", row, attempt)


def test_format_masks_and_whole_numbers() -> None:
    assert typed(["YYYY-MM-DD", "YYYY-MM-DD HH:mm:ss", "2025-03-23"], "string") == ["2025-03-23"]
    ent = Entity(name="hotel", key="id", fields=[EntityField(name="id", primary_key=True)])
    adults = [
        field_value(ent, EntityField(name="adults", type="number", examples=[2]), i)
        for i in range(8)
    ]
    assert all(isinstance(a, int) and 1 <= a <= 9 for a in adults)
    period = [field_value(ent, EntityField(name="period", examples=["1mo"]), i) for i in range(8)]
    assert all(re.fullmatch(r"[1-9]mo", p) for p in period)
