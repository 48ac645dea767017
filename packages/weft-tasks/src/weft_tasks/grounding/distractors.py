"""Near-duplicate distractors (paper §3.1.2, grounding round iii).

A careless agent picks the first row that looks right. For each target row a task acts on, a new
row is made that looks almost the same: its own key (past every key of the table), every unique
value changed so the schema holds (a second address at the same domain), the person or item name
altered by one visible detail (a middle initial), and the rest - segment, country, the parent it
references - kept, so a search or a list filter returns both. A record with no name (an account, an order) is
confused through the parent it references: a second one of the same customer and kind, with one
detail (an address, a description, else an amount) apart where it has one. It never carries a value of a bound
object, so it never impersonates the object the task is about, and checks that name rows by key
or by the bound values keep their meaning.
"""

from __future__ import annotations

import re
from typing import Any

from weft_core.models import Entity

_NUMBERED = re.compile(r"^(.*?)(\d+)$")
_INITIALS = "JKMRST"


def _next_key(existing: set[Any], template: Any, salt: int) -> Any:
    """A fresh key shaped like `template` ("CUS-0001" -> "CUS-0901"), unused in `existing`."""
    if isinstance(template, int) and not isinstance(template, bool):
        base = max((k for k in existing if isinstance(k, int)), default=0) + 900
        return base + salt
    text = str(template)
    m = _NUMBERED.match(text)
    while True:
        key = f"{m.group(1)}{900 + salt:0{len(m.group(2))}d}" if m else f"{text}-d{salt}"
        if key not in existing:
            return key
        salt += 1


def _altered(value: str, field: str, salt: int) -> str:
    """A value that reads almost like `value` but is a different one."""
    if "@" in value:
        local, _, domain = value.partition("@")
        return f"{local}.{salt + 1}@{domain}"
    words = value.split(" ")
    if len(words) >= 2 and ("name" in field or words[0][:1].isupper()):
        return f"{words[0]} {_INITIALS[salt % len(_INITIALS)]}. {' '.join(words[1:])}"
    digits = re.sub(r"\D", "", value)
    if digits and len(digits) >= 5 and len(digits) >= len(value) // 2:  # a phone number
        return value[:-1] + str((int(value[-1]) + 1 + salt) % 10) if value[-1].isdigit() else value
    return f"{value} ({salt + 2})"


def near_duplicate(
    entity: Entity, row: dict[str, Any], existing: list[dict[str, Any]], bound: set[str], salt: int
) -> dict[str, Any] | None:
    """A distractor for `row` of `entity`, or None when the table has neither a name to confuse
    nor a parent the row belongs to."""
    keys = {r.get(entity.key) for r in existing}
    out = dict(row)
    out[entity.key] = _next_key(keys, row.get(entity.key), salt)
    changed = False
    for f in entity.fields:
        value = row.get(f.name)
        if f.name == entity.key or f.foreign_key or not isinstance(value, str) or f.enum:
            continue
        looks = any(h in f.name for h in ("name", "title", "subject", "email", "phone"))
        if f.unique or value in bound or looks:
            out[f.name] = _altered(value, f.name, salt)
            taken = {r.get(f.name) for r in existing}
            n = salt
            while out[f.name] in taken:  # another distractor took it: walk on
                n += 1
                out[f.name] = _altered(value, f.name, n)
            changed |= looks
    if not changed and any(f.foreign_key and row.get(f.name) is not None for f in entity.fields):
        # a record with no name (an account, an order, a payment) is confused through what it
        # belongs to: a second one of the same customer and kind, one detail apart when it has
        # a detail to change (a second EUR savings account of one customer is one already)
        _alter_detail(entity, row, out, salt)
        changed = True
    return out if changed else None


def _alter_detail(entity: Entity, row: dict[str, Any], out: dict[str, Any], salt: int) -> bool:
    """Change one visible detail of a nameless record in `out`: its first free text (an address,
    a description), else its first number (a quantity, an amount). False when it has neither."""
    plain = [
        f
        for f in entity.fields
        if f.name != entity.key and not f.foreign_key and not f.enum and not f.primary_key
    ]
    for f in plain:
        value = row.get(f.name)
        if isinstance(value, str) and value.strip() and not f.unique and f.type == "string":
            out[f.name] = _altered(value, f.name, salt)
            return True
    for f in plain:
        value = row.get(f.name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[f.name] = (
                value + 1 + salt if isinstance(value, int) else round(value + 1.0 + salt, 2)
            )
            return True
    return False
