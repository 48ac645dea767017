"""Realistic sample rows for seed.sqlite, deterministic per entity and field name.

Values depend only on the entity name, the field name and the row index, never on the MCP, so a
customer CUS-0001 seeded in a CRM and in an orders MCP has the same id, name and email: cross-MCP
tasks can bind them.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from weft_core.models import Entity, EntityField, EntityModel, MCPSpec
from weft_envsynth._internal import words as W
from weft_envsynth.plans import SeedPlan

FIRST = [
    "Alice",
    "Bruno",
    "Chen",
    "Dalia",
    "Emeka",
    "Fatima",
    "Gustav",
    "Hana",
    "Ivan",
    "Julia",
    "Kofi",
    "Lena",
]
LAST = [
    "Martin",
    "Okafor",
    "Li",
    "Haddad",
    "Novak",
    "Silva",
    "Berg",
    "Tanaka",
    "Petrov",
    "Rossi",
    "Mensah",
    "Weber",
]
CITIES = [
    "Berlin",
    "Lisbon",
    "Toronto",
    "Osaka",
    "Nairobi",
    "Austin",
    "Lyon",
    "Seoul",
    "Denver",
    "Madrid",
]
COUNTRIES = ["DE", "PT", "CA", "JP", "KE", "US", "FR", "KR", "US", "ES"]
CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CAD"]
ADJ = [
    "quarterly",
    "priority",
    "standard",
    "annual",
    "regional",
    "premium",
    "urgent",
    "shared",
    "archived",
    "pilot",
]
_PEOPLE = {
    "customer",
    "employee",
    "user",
    "contact",
    "person",
    "member",
    "patient",
    "student",
    "agent",
    "author",
    "owner",
    "assignee",
    "candidate",
    "attendee",
    "client",
    "lead",
    "manager",
    "staff",
    "driver",
    "guest",
    "recipient",
    "sender",
}
_STOP = {
    "the",
    "and",
    "for",
    "with",
    "from",
    "that",
    "this",
    "into",
    "your",
    "will",
    "are",
    "can",
    "use",
    "uses",
    "used",
    "all",
    "any",
    "via",
    "its",
    "has",
    "have",
    "not",
    "you",
    "get",
    "set",
    "list",
    "tool",
    "tools",
    "returns",
    "return",
    "given",
    "based",
    "mcp",
    "server",
    "using",
    "such",
    "other",
    "when",
    "which",
    "also",
    "more",
    "than",
    "each",
    "their",
    "them",
    "these",
    "about",
    "only",
    "must",
    "should",
    "string",
    "number",
    "optional",
    "required",
    "default",
}


def vocabulary(spec: MCPSpec, n: int = 40) -> list[str]:
    """Frequent content words of the spec's descriptions: the words reference data is about."""
    counts: Counter[str] = Counter()
    texts = (
        [spec.description]
        + [t.description for t in spec.tools]
        + [t.name.replace("_", " ") for t in spec.tools]
    )
    for text in texts:
        for w in re.findall(r"[A-Za-z]{4,}", text or ""):
            lw = w.lower()
            if lw not in _STOP:
                counts[lw] += 1
    words = [w for w, _ in counts.most_common(n)]
    return words or ["alpha", "beta", "gamma", "delta"]


def _person(i: int) -> tuple[str, str]:
    return FIRST[i % len(FIRST)], LAST[(i * 7 + 3) % len(LAST)]


def field_value(entity: Entity, f: EntityField, i: int, vocab: list[str]) -> Any:
    """A realistic value of `f` for row `i` of `entity`."""
    name = f.name
    words = name.split("_")
    ent_title = entity.name.replace("_", " ").title()
    first, last = _person(i)
    if f.enum:
        return f.enum[i % len(f.enum)]
    if f.type == "boolean":
        return i % 2 == 0
    if f.type == "integer":
        if any(w in words for w in ("year",)):
            return 2020 + i % 6
        if any(w in words for w in ("age",)):
            return 25 + (i * 7) % 40
        if any(
            w in words for w in ("quantity", "qty", "stock", "count", "units", "capacity", "seats")
        ):
            return 5 + i * 3
        return i + 1
    if f.type == "number":
        if any(w in words for w in ("rate", "ratio", "score", "rating", "percent", "probability")):
            return round(0.5 + (i % 5) * 0.1, 2)
        if any(w in words for w in ("lat", "latitude")):
            return round(40.0 + i * 0.5, 4)
        if any(w in words for w in ("lon", "lng", "longitude")):
            return round(-3.5 + i * 0.5, 4)
        return round(19.99 + i * 10.5, 2)
    if f.type == "date":
        return f"2026-{1 + i % 9:02d}-{10 + i % 18:02d}"
    if f.type == "datetime":
        return f"2026-{1 + i % 9:02d}-{10 + i % 18:02d}T{9 + i % 8:02d}:30:00Z"
    if f.type == "json":
        return None
    # strings
    if "email" in words:
        return f"{first}.{last}{'' if i < 12 else i}@example.com".lower()
    if name in {"first_name", "firstname", "given_name"}:
        return first
    if name in {"last_name", "lastname", "family_name", "surname"}:
        return last
    if name in {
        "name",
        "full_name",
        "fullname",
        "display_name",
        "username",
        "contact_name",
        "customer_name",
        "employee_name",
    }:
        if entity.name in _PEOPLE or name != "name" or any(p in entity.name for p in _PEOPLE):
            return f"{first} {last}" if name != "username" else f"{first}{last}{i}".lower()
        return f"{ADJ[i % len(ADJ)].title()} {ent_title} {i + 1}"
    if "phone" in words or "mobile" in words:
        return f"+1-555-01{i:02d}"
    if "city" in words:
        return CITIES[i % len(CITIES)]
    if "country" in words:
        return COUNTRIES[i % len(COUNTRIES)]
    if "currency" in words:
        return CURRENCIES[i % len(CURRENCIES)]
    if "url" in words or "link" in words or "website" in words:
        return f"https://example.com/{entity.name}/{i + 1}"
    if "date" in words or name.endswith("_at") or "time" in words:
        return f"2026-{1 + i % 9:02d}-{10 + i % 18:02d}"
    if "sku" in words or "code" in words:
        return f"{W.id_prefix(entity.name)}-{name[:3].upper()}-{100 + i}"
    if "address" in words:
        return f"{10 + i} Market Street, {CITIES[i % len(CITIES)]}"
    topic = f"{vocab[i % len(vocab)]} {vocab[(i + 3) % len(vocab)]}"
    if any(w in words for w in ("title", "subject", "headline", "label", "summary")):
        return f"{ADJ[i % len(ADJ)].title()} {topic} {ent_title.lower()}"
    if any(
        w in words
        for w in (
            "description",
            "content",
            "body",
            "text",
            "notes",
            "note",
            "message",
            "comment",
            "details",
            "snippet",
            "answer",
            "result",
        )
    ):
        return f"{ent_title} record {i + 1} about {topic}: {ADJ[(i + 1) % len(ADJ)]} {vocab[(i + 5) % len(vocab)]} information."
    if f.unique:
        return f"{name.replace('_', '-')}-{i + 1:03d}"
    return f"{ADJ[i % len(ADJ)]} {vocab[i % len(vocab)]}"


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
    vocab = vocabulary(spec)
    plan = SeedPlan()
    keys: dict[str, list[Any]] = {}
    cyclic_nulls: set[tuple[str, str]] = set()
    order = _order(model)
    for e in order:
        n = reference_rows if e.reference_data else rows
        out = []
        for i in range(n):
            row: dict[str, Any] = {}
            for f in e.fields:
                if f.primary_key:
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
                    row[f.name] = field_value(e, f, i, vocab)
            out.append(row)
        keys[e.name] = [r[e.key] for r in out]
        plan.rows[e.name] = out
    return plan
