"""Realistic sample rows for seed.sqlite, from Faker, deterministic per entity and field name.

Values depend only on the entity name, the field name and the row index, never on the MCP, so a
customer CUS-0001 seeded in a CRM and in an orders MCP has the same id, name and email: cross-MCP
tasks can bind them. No word lists: Faker's providers are chosen by the field's type and name, and
enum values and examples come from the definitions (examples and their format: shapes.py, which
says what happens when two MCPs give the same field different examples).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from typing import Any

from faker import Faker

from weft_core.models import Entity, EntityField, EntityModel, MCPSpec
from weft_envsynth._internal import words as W
from weft_envsynth.plans import SeedPlan
from weft_envsynth.shapes import example_value, unique_column

_PEOPLE = {
    "customer", "employee", "user", "contact", "person", "member", "patient", "student", "agent",
    "author", "owner", "assignee", "candidate", "attendee", "client", "lead", "manager", "staff",
    "driver", "guest", "recipient", "sender", "receiver", "passenger", "traveler", "buyer",
}  # fmt: skip
_ORGS = {"company", "organization", "organisation", "vendor", "supplier", "merchant", "airline"}


# Dates and times spread a year either side of a fixed day, not of today: a bundle built again
# (another day, another second) must seed the same rows, or its certified tasks' initial-state
# hashes and the checks that name seeded values stop matching.
SEED_EPOCH = dt.datetime(2026, 1, 1)
_SPAN = dt.timedelta(days=365)


def _date(fake: Faker) -> str:
    return fake.date_between(SEED_EPOCH.date() - _SPAN, SEED_EPOCH.date() + _SPAN).isoformat()


def _datetime(fake: Faker) -> str:
    value = fake.date_time_between(SEED_EPOCH - _SPAN, SEED_EPOCH + _SPAN)
    return value.isoformat(timespec="seconds") + "Z"


@functools.lru_cache(maxsize=1)
def _faker() -> Faker:
    return Faker("en_US")


def _fake(*key: object) -> Faker:
    """The shared Faker, seeded from `key` alone: the same entity, field and row give the same
    value in every bundle and every process (no dependence on the MCP or on call order)."""
    fake = _faker()
    digest = hashlib.sha256("\x1f".join(map(str, key)).encode()).digest()
    fake.seed_instance(int.from_bytes(digest[:8], "big"))
    return fake


def _is_person(entity: Entity) -> bool:
    return entity.name in _PEOPLE or any(p in entity.name.split("_") for p in _PEOPLE)


def _person(entity: Entity, i: int) -> tuple[str, str]:
    # One person per (entity, row): name, email and username fields of that row agree.
    fake = _fake("person", entity.name, i)
    return fake.first_name(), fake.last_name()


def field_value(entity: Entity, f: EntityField, i: int, vocab: list[str] | None = None) -> Any:
    """A realistic value of `f` for row `i` of `entity` (type-, name- and enum-aware, via Faker).

    `vocab` is accepted for compatibility and unused: values come from Faker providers chosen by
    the field's type, format and name, and from its enum."""
    name = f.name
    words = set(name.split("_"))
    fake = _fake(entity.name, name, i)
    first, last = _person(entity, i)
    if f.enum:
        return f.enum[i % len(f.enum)]
    if f.examples and f.type != "json":
        return example_value(f.examples, f.type, i, fake)
    if f.type == "boolean":
        return i % 2 == 0
    if f.type == "integer":
        if words & {"year"}:
            return fake.random_int(2018, 2026)
        if words & {"age"}:
            return fake.random_int(19, 78)
        if words & {"quantity", "qty", "stock", "count", "units", "capacity", "seats", "shares"}:
            return fake.random_int(1, 250)
        if words & {"percent", "percentage", "score", "rating"}:
            return fake.random_int(0, 100)
        return i + 1 if words & {"number", "index", "position", "rank"} else fake.random_int(1, 999)
    if f.type == "number":
        if words & {"rate", "ratio", "probability", "change"}:
            return round(fake.pyfloat(min_value=-1, max_value=1), 3)
        if words & {"score", "rating"}:
            return round(fake.pyfloat(min_value=1, max_value=5), 1)
        if words & {"lat", "latitude"}:
            return float(fake.latitude())
        if words & {"lon", "lng", "longitude"}:
            return float(fake.longitude())
        return round(fake.pyfloat(min_value=5, max_value=5000), 2)
    if f.type == "date":
        return _date(fake)
    if f.type == "datetime":
        return _datetime(fake)
    if f.type == "json":
        return None
    value = _string_value(entity, f, i, fake, first, last)
    if f.unique and not words & {"email", "username", "login"}:
        value = f"{value}-{i + 1:03d}"
    return value


def _string_value(
    entity: Entity, f: EntityField, i: int, fake: Faker, first: str, last: str
) -> str:
    name = f.name
    words = set(name.split("_"))
    if "email" in words:
        return f"{first}.{last}{i + 1}@example.com".lower()
    if name in {"first_name", "firstname", "given_name"}:
        return first
    if name in {"last_name", "lastname", "family_name", "surname"}:
        return last
    if words & {"username", "login", "handle", "user_name"} or name == "user":
        return f"{first}{last}{i}".lower()
    if words & {"password", "secret", "token"}:
        return fake.password(length=12)
    if name in {"name", "full_name", "fullname", "display_name"} or (
        "name" in words and words & _PEOPLE
    ):
        if _is_person(entity) or name != "name":
            return f"{first} {last}"
        if entity.name in _ORGS:
            return fake.company()
        return f"{fake.word().title()} {entity.name.replace('_', ' ').title()}"
    if words & {"company", "organization", "employer", "vendor", "supplier", "airline"}:
        return fake.company()
    if words & {"phone", "mobile", "fax"}:
        return fake.phone_number()
    if words & {"city", "town"}:
        return fake.city()
    if words & {"state", "province", "region"} and "status" not in words:
        return fake.state()
    if words & {"country"}:
        return fake.country_code()
    if words & {"currency"}:
        return fake.currency_code()
    if words & {"zip", "postcode", "postal"}:
        return fake.postcode()
    if words & {"address", "street"}:
        return fake.street_address()
    if words & {"url", "link", "website", "homepage"}:
        return fake.url()
    if words & {"ip"}:
        return fake.ipv4()
    if words & {"color", "colour"}:
        return fake.color_name()
    if words & {"job", "occupation", "role"}:
        return fake.job()
    if words & {"symbol", "ticker"}:
        return fake.lexify("????").upper()
    if words & {"sku", "code", "iban", "card", "plate", "isbn"}:
        return fake.bothify("??-####-??").upper()
    if words & {"date", "day", "deadline"} or name.endswith("_at") or words & {"time"}:
        return _date(fake)
    if words & {"title", "subject", "headline", "label", "summary", "topic"}:
        return fake.sentence(nb_words=4).rstrip(".")
    if words & {
        "description", "content", "body", "text", "notes", "note", "message", "comment",
        "details", "snippet", "answer", "result", "bio", "review", "feedback",
    }:  # fmt: skip
        return fake.paragraph(nb_sentences=2)
    if words & {"tag", "category", "type", "kind", "genre", "sector", "department"}:
        return fake.word()
    return fake.word() if not f.unique else name.replace("_", "-")


def _order(model: EntityModel) -> list[Entity]:
    """Entities in foreign-key order (parents first)."""
    deps = {
        e.name: {(f.foreign_key or "").split(".")[0] for f in e.fields if f.foreign_key} - {e.name}
        for e in model.entities
    }
    done: list[str] = []
    pending = dict(deps)
    while pending:
        ready = [n for n, d in pending.items() if d <= set(done)]
        if (
            not ready
        ):  # a cycle: break it deterministically; FK values stay valid as rows go in first
            ready = [sorted(pending)[0]]
        for n in sorted(ready):
            done.append(n)
            pending.pop(n)
    by = {e.name: e for e in model.entities}
    return [by[n] for n in done]


def seed_programmatic(
    model: EntityModel, spec: MCPSpec, *, rows: int = 6, reference_rows: int = 8
) -> SeedPlan:
    plan = SeedPlan()
    keys: dict[str, list[Any]] = {}
    cyclic_nulls: set[tuple[str, str]] = set()
    order = _order(model)
    for e in order:
        n = reference_rows if e.reference_data else rows
        # Keys and unique fields with examples take a whole column of distinct values at once.
        columns = {
            f.name: unique_column(f.examples, f.type, n, functools.partial(_fake, e.name, f.name))
            for f in e.fields
            if f.examples and not f.enum and not f.foreign_key and (f.primary_key or f.unique)
        }
        out = []
        for i in range(n):
            row: dict[str, Any] = {}
            for f in e.fields:
                if f.name in columns:
                    row[f.name] = columns[f.name][i]
                elif f.primary_key:
                    row[f.name] = (
                        i + 1 if f.type == "integer" else f"{W.id_prefix(e.name)}-{i + 1:04d}"
                    )
                elif f.foreign_key:
                    parent = f.foreign_key.split(".")[0]
                    pk = keys.get(parent)
                    if pk:
                        row[f.name] = pk[i % len(pk)]
                    else:
                        row[f.name] = None
                        cyclic_nulls.add((e.name, f.name))
                else:
                    row[f.name] = field_value(e, f, i)
            out.append(row)
        keys[e.name] = [r[e.key] for r in out]
        plan.rows[e.name] = out
    return plan
