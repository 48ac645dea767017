"""Seed values: realistic (Faker, by type, name and enum), deterministic, shared across MCPs."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from weft_core.models import Entity, EntityField, MCPSpec, ToolSpec
from weft_envsynth.analyze import analyze_programmatic
from weft_envsynth.seed import SEED_EPOCH, field_value


def _entity(name: str, *fields: EntityField) -> Entity:
    return Entity(
        name=name,
        key=f"{name}_id",
        fields=[EntityField(name=f"{name}_id", primary_key=True), *fields],
    )


def test_values_follow_type_name_and_enum() -> None:
    cust = _entity("customer")
    email = [field_value(cust, EntityField(name="email"), i) for i in range(6)]
    assert all(re.fullmatch(r"[a-z'.-]+\d+@example\.com", e) for e in email)
    assert len(set(email)) == 6
    name = field_value(cust, EntityField(name="name"), 0)
    assert len(name.split()) >= 2  # a person's full name
    # The row's name and email belong to the same person.
    first = name.split()[0].lower()
    assert email[0].startswith(first)
    stock = _entity("stock")
    sym = field_value(stock, EntityField(name="symbol"), 3)
    assert re.fullmatch(r"[A-Z]{4}", sym)
    tier = EntityField(name="tier", enum=["gold", "silver"])
    assert [field_value(cust, tier, i) for i in range(3)] == ["gold", "silver", "gold"]
    price = field_value(_entity("order"), EntityField(name="price", type="number"), 1)
    assert isinstance(price, float) and price > 0


def test_same_entity_field_row_gives_the_same_value_in_every_bundle() -> None:
    a = field_value(_entity("customer"), EntityField(name="phone"), 4)
    b = field_value(_entity("customer"), EntityField(name="phone"), 4)
    assert a == b
    assert field_value(_entity("customer"), EntityField(name="phone"), 5) != a


def test_documented_response_fields_become_entity_fields() -> None:
    spec = MCPSpec(
        name="stocks",
        tools=[
            ToolSpec(
                name="get_stock_info",
                description="Get the details of a stock.",
                input_schema={"type": "object", "properties": {"symbol": {"type": "string"}}},
                output_schema={
                    "type": "object",
                    "properties": {
                        "price": {"type": "number"},
                        "volume": {"type": "number"},
                        "history": {"type": "array", "items": {"$ref": "#/defs/Undefined"}},
                    },
                },
            )
        ],
    )
    analysis = analyze_programmatic(spec)
    stock = next(e for e in analysis.entities if "stock" in e.name)
    names = {f.name for f in stock.fields}
    assert {"price", "volume"} <= names
    assert "history" not in names  # an undefined nested type adds nothing


def test_dates_do_not_depend_on_the_clock() -> None:
    # They spread a year either side of a fixed day: built today or next year, a bundle seeds the
    # same rows (relative to today, its certified initial-state hashes changed every second).
    event = _entity("event")
    low, high = SEED_EPOCH - timedelta(days=365), SEED_EPOCH + timedelta(days=365)
    for i in range(100):
        when = field_value(event, EntityField(name="start", type="datetime"), i)
        assert low <= datetime.fromisoformat(when.removesuffix("Z")) <= high
        day = field_value(event, EntityField(name="due", type="date"), i)
        assert low.date() <= date.fromisoformat(day) <= high.date()
        named = field_value(event, EntityField(name="created_at"), i)
        assert low.date() <= date.fromisoformat(named) <= high.date()
