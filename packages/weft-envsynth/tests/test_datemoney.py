"""Date arithmetic, weekdays and currency conversion are computed when the definition says so;
calendar stores and rate-less conversions are not."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth.computesem import compute_semantics, lookup_reason, operand_roles

S = {"type": "string"}
D = {"type": "string", "format": "date"}
I = {"type": "integer"}  # noqa: E741
N = {"type": "number"}


def tool(
    name: str, desc: str, props: dict[str, Any], required: list[str] | None = None
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={
            "type": "object",
            "properties": props,
            "required": list(props) if required is None else required,
        },
        output_schema={"type": "object", "properties": {"result": S}},
    )


ADD_DAYS = tool("add_days", "Add a number of days to a date.", {"date": D, "days": I})
SUB_MONTHS = tool("subtract_months", "Subtract months from a date.", {"start_date": S, "months": I})
SHIFT = tool(
    "shift_date",
    "Move a date forward.",
    {"date": D, "amount": I, "unit": {"type": "string", "enum": ["days", "weeks", "months"]}},
)
BETWEEN = tool(
    "days_between", "Number of days between two dates.", {"start_date": D, "end_date": D}
)
WEEKDAY = tool("day_of_week", "The day of the week of a date.", {"date": D})
FX_RATE = tool(
    "convert_currency",
    "Convert an amount between currencies at the given exchange rate.",
    {"amount": N, "from_currency": S, "to_currency": S, "rate": N},
)
FX_TABLE = tool(
    "convert_currency",
    "Convert an amount between currencies at fixed rates: 1 USD = 0.92 EUR, 1 GBP = 1.27 USD.",
    {"amount": N, "from_currency": S, "to_currency": S},
)
FX_NONE = tool(
    "convert_currency",
    "Convert an amount from one currency to another at today's rate.",
    {"amount": N, "from_currency": S, "to_currency": S},
)


def test_date_operations_are_recognised_with_their_roles() -> None:
    sem = compute_semantics(ADD_DAYS)
    assert sem is not None and sem.op == "date_add"
    assert operand_roles(sem) == {"date": "date", "days": "days"} and sem.constants == {"sign": 1}
    sem = compute_semantics(SUB_MONTHS)
    assert sem is not None and sem.op == "date_add" and sem.constants["sign"] == -1
    assert operand_roles(sem) == {"start_date": "date", "months": "months"}
    sem = compute_semantics(SHIFT)
    assert sem is not None and operand_roles(sem) == {
        "date": "date",
        "amount": "amount",
        "unit": "unit",
    }
    sem = compute_semantics(BETWEEN)
    assert sem is not None and sem.op == "date_diff"
    assert operand_roles(sem) == {"start_date": "start", "end_date": "end"}
    sem = compute_semantics(WEEKDAY)
    assert sem is not None and sem.op == "weekday"


def test_calendar_stores_and_record_queries_are_not_date_arithmetic() -> None:
    hostile = [
        # A calendar event store: "add" and a date, but it keeps a record.
        tool("add_event", "Add an event on a date.", {"date": D, "title": S, "days": I}),
        tool("add_calendar_entry", "Add days off to the calendar.", {"date": D, "days": I}),
        # A required argument that no date operation uses.
        tool("add_days", "Add days to a date for a user.", {"date": D, "days": I, "user_id": S}),
        # Records between two dates are a query, not a difference.
        tool("get_orders_between", "Orders placed between two dates.", {"start": D, "end": D}),
        tool("list_events_between", "Difference-free listing.", {"start_date": D, "end_date": D}),
        # "add" with no calendar unit: no amount to shift by.
        tool("add_date", "Store a date.", {"date": D, "label": S}),
        # 'update' ends like 'date' but is no date.
        tool("add_days", "Add days.", {"update": S, "days": I}),
    ]
    for t in hostile:
        sem = compute_semantics(t)
        assert sem is None or sem.op not in {"date_add", "date_diff", "weekday"}, t.name


def test_currency_needs_a_rate_source() -> None:
    sem = compute_semantics(FX_RATE)
    assert sem is not None and sem.op == "currency" and operand_roles(sem)["rate"] == "rate"
    sem = compute_semantics(FX_TABLE)
    assert sem is not None and sem.constants["rates"] == {"USD/EUR": "0.92", "GBP/USD": "1.27"}
    # No rate: neither a currency computation nor a unit conversion ("convert" in the name);
    # the reason says what is missing.
    assert compute_semantics(FX_NONE) is None
    assert "gives no rate" in lookup_reason(FX_NONE)
    # A rate lookup without an amount is no conversion at all.
    assert compute_semantics(tool("get_exchange_rate", "Currency rate.", {"a": S, "b": S})) is None


CAL = MCPSpec(
    name="Calendar math",
    domain="Utilities",
    description="Date and money helpers.",
    tools=[
        *(ADD_DAYS, SUB_MONTHS, SHIFT, BETWEEN, WEEKDAY, FX_RATE),
        FX_TABLE.model_copy(update={"name": "convert_fixed"}),
        FX_NONE.model_copy(update={"name": "convert_live"}),
    ],
)


@pytest.fixture(scope="module")
def cal_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_envsynth import synthesize_spec

    res = synthesize_spec(CAL, tmp_path_factory.mktemp("cal"))
    assert res.status == "certified", res.uncertified
    return Path(res.bundle or "")


def test_bundle_computes_dates_and_money(cal_bundle: Path, tmp_path: Path) -> None:
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth.loader import import_bundle

    calls = [
        ("add_days", {"date": "2023-12-25", "days": 10}),
        ("subtract_months", {"start_date": "2024-05-31", "months": 3}),
        ("shift_date", {"date": "2024-01-31", "amount": 1, "unit": "months"}),
        ("days_between", {"start_date": "2024-12-25", "end_date": "2025-01-06"}),
        ("day_of_week", {"date": "1969-07-20"}),
        (
            "convert_currency",
            {"amount": 19.99, "from_currency": "usd", "to_currency": "JPY", "rate": 151.234},
        ),
        ("convert_fixed", {"amount": 10, "from_currency": "USD", "to_currency": "GBP"}),
        ("add_days", {"date": "Tuesday", "days": 1}),
        ("convert_fixed", {"amount": 10, "from_currency": "USD", "to_currency": "CHF"}),
    ]
    out: list[Any] = []

    async def go() -> None:
        with bind_session(SessionBinding("cal", tmp_path / "s.sqlite", tmp_path / "ws")):
            async with Client(import_bundle(cal_bundle).create_server()) as c:
                for name, args in calls:
                    r = await c.call_tool(name, args, raise_on_error=False)
                    out.append((r.is_error, r.structured_content or r.content[0].text))

    try:
        asyncio.run(go())
    finally:
        release_session("cal")
    assert out[0] == (False, {"result": "2024-01-04"})
    assert out[1] == (False, {"result": "2024-02-29"})  # May 31 - 3 months: end of February
    assert out[2] == (False, {"result": "2024-02-29"})
    # The documented result is a string (shapert: the documented type where nothing is lost).
    assert out[3] == (False, {"result": "12"})
    assert out[4] == (False, {"result": "Sunday"})
    assert out[5] == (False, {"result": "3023.17"})  # 19.99 x 151.234 = 3023.16766, to the cent
    assert out[6] == (False, {"result": "7.87"})  # 10 / 1.27 (the inverse of GBP -> USD)
    assert out[7][0] is True and "date" in str(out[7][1])
    assert out[8][0] is True and "no rate from USD to CHF" in str(out[8][1])
    validation = json.loads((cal_bundle / "validation.json").read_text())
    names = {c["name"] for r in validation["rounds"] for c in r["checks"]}
    assert {"computes_date_add", "computes_date_diff", "computes_weekday"} <= names
    assert {"computes_currency", "refuses_currency", "refuses_date_add"} <= names
    semantics = validation["tool_semantics"]
    assert semantics["subtract_months"]["kind"] == "compute"
    assert semantics["convert_live"]["kind"] == "lookup"
    assert "gives no rate" in semantics["convert_live"]["why"]


def test_a_conversion_over_listed_units_is_probed_with_them(tmp_path: Path) -> None:
    # From the Toucan corpus (mcp-units): units are an enum without km/m; the km -> m probe was
    # refused by the schema and the whole server rejected. The probe now converts 100 C to 212 F.
    from weft_envsynth import synthesize_spec
    from weft_envsynth._internal.computechecks import _convert_probe

    unit = {"type": "string", "enum": ["C", "F"]}
    tool = ToolSpec(
        name="convert_temperature",
        description="Convert between Celsius (C) and Fahrenheit (F) temperatures",
        input_schema={
            "type": "object",
            "properties": {
                "value": {"type": "number", "description": "Temperature value to convert"},
                "from_unit": unit | {"description": "Source temperature unit (C or F)"},
                "to_unit": unit | {"description": "Target temperature unit (C or F)"},
            },
            "required": ["value", "from_unit", "to_unit"],
        },
    )
    sem = compute_semantics(tool)
    assert sem is not None and sem.op == "convert"
    assert _convert_probe(tool, sem) == ({"x": 100, "unit_in": "C", "unit_out": "F"}, 212.0, None)
    odd = tool.model_copy(
        update={
            "input_schema": {
                **tool.input_schema,
                "properties": {
                    **tool.input_schema["properties"],
                    "from_unit": {"type": "string", "enum": ["parsec"]},
                },
            }
        }
    )
    odd_sem = compute_semantics(odd)
    assert odd_sem is not None and _convert_probe(odd, odd_sem) is None  # no known fact fits
    res = synthesize_spec(MCPSpec(name="units", tools=[tool]), tmp_path)
    assert res.status == "certified", res.uncertified
