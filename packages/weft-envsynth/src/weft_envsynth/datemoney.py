"""Compute tools over dates and money: date arithmetic, weekdays and currency conversion.

`add_days(date, days)`, `days_between(start_date, end_date)`, `day_of_week(date)` and
`convert_currency(amount, from_currency, to_currency, rate)` are functions of their arguments,
not lookups. The operation is read from the name words and the description, and accepted only
when the parameters fit it: one date and amounts named by a calendar unit (or an amount with a
unit enum) to shift a date, two dates for a difference, one date for a weekday; and every
required argument plays a role. A tool whose name says it keeps calendar records
(`add_event(date, title)`) is a store, not arithmetic.

A currency conversion needs a rate: a rate argument, or a fixed rate table written in the
definition (`1 USD = 0.92 EUR`). Without one the tool stays a lookup, and `why_not` says so
(it reaches `validation.json` through `computesem.lookup_reason`).
"""

from __future__ import annotations

import re
from typing import Any

from weft_core.models import ToolSpec
from weft_envsynth._internal import words as W
from weft_envsynth._internal.jsonschema import schema_type

_UNITS = {"day": "days", "week": "weeks", "month": "months", "year": "years"}
# Name words of tools that keep calendar records: their date arguments are data, not operands.
_STORE_NOUNS = {
    "event",
    "meeting",
    "appointment",
    "booking",
    "reservation",
    "reminder",
    "calendar",
    "task",
    "note",
    "holiday",
    "entry",
    "slot",
    "schedule",
}
_SHIFT_WORDS = {"add", "plus", "shift", "offset", "subtract", "minus"}
_MINUS_WORDS = {"subtract", "minus", "before", "ago"}
_CURRENCY_WORDS = {"currency", "currencies", "fx", "forex", "exchange"}
_RATE_TABLE = re.compile(r"\b1\s*([A-Z]{3})\s*=\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Z]{3})\b")


def _desc(tool: ToolSpec) -> str:
    return " ".join(tool.description.split()).lower()


def _words(name: str) -> set[str]:
    return {W.singular(w) for w in W.split_words(name)}


def _is_date(name: str, schema: Any) -> bool:
    if schema_type(schema) not in {None, "string"}:
        return False
    fmt = schema.get("format") if isinstance(schema, dict) else None
    # 'date', 'start_date', 'birthdate'; not 'update' (a payload, not a day).
    return fmt in {"date", "date-time"} or any(
        w.endswith("date") and not w.endswith("update") for w in W.split_words(name)
    )


def _unit_of(name: str) -> str | None:
    hits = {_UNITS[w] for w in _words(name) if w in _UNITS}
    return hits.pop() if len(hits) == 1 else None


def _unit_enum(schema: Any) -> bool:
    enum = schema.get("enum") if isinstance(schema, dict) else None
    return (
        isinstance(enum, list)
        and bool(enum)
        and all(isinstance(v, str) and W.singular(v.lower()) in _UNITS for v in enum)
    )


def _all_required_have_roles(tool: ToolSpec, roles: dict[str, str]) -> bool:
    return all(a in roles for a in tool.required)


def date_money_semantics(tool: ToolSpec) -> tuple[dict[str, Any] | None, str | None]:
    """(semantics, None) for a date or currency compute tool: `op`, `roles` (argument -> role)
    and `constants` (the sign of a shift, a rate table); (None, why) for a currency conversion
    that has no rate source; (None, None) when the definition names none of these operations."""
    names = _words(tool.name)
    if names & _STORE_NOUNS:
        return None, None
    text = _desc(tool)
    props = tool.properties
    dates = [a for a, s in props.items() if _is_date(a, s)]
    if (cur := _currency(tool, names, text)) is not None:
        return cur
    if (
        names & {"weekday"}
        or "day_of_week" in W.identifier(tool.name)
        or (re.search(r"\bday of (the )?week\b", text) and len(props) == 1)
    ):
        if len(dates) == 1:
            roles = {dates[0]: "date"}
            if _all_required_have_roles(tool, roles):
                return {"op": "weekday", "roles": roles, "constants": {}}, None
        return None, None
    diff_named = bool(names & {"diff", "difference", "datediff", "elapsed"}) or (
        {"day", "between"} <= names
    )
    if diff_named or re.search(r"\b(difference|number of days|how many days)\b.*\bbetween\b", text):
        if len(dates) == 2:
            roles = {dates[0]: "start", dates[1]: "end"}
            if _all_required_have_roles(tool, roles):
                return {"op": "date_diff", "roles": roles, "constants": {}}, None
        return None, None
    shift_text = re.search(
        r"\b(add|adds|adding|subtract|subtracts|subtracting)\b[^.]*\b(days?|weeks?|months?|years?)\b",
        text,
    )
    if names & _SHIFT_WORDS or shift_text:
        return _shift(tool, names, text, dates)
    return None, None


def _shift(
    tool: ToolSpec, names: set[str], text: str, dates: list[str]
) -> tuple[dict[str, Any] | None, str | None]:
    props = tool.properties
    if len(dates) != 1:
        return None, None
    nums = [a for a, s in props.items() if schema_type(s) in {"integer", "number"}]
    roles: dict[str, str] = {dates[0]: "date"}
    for a in nums:
        if (unit := _unit_of(a)) is not None and unit not in roles.values():
            roles[a] = unit
    if len(roles) == 1:
        # add_to_date(date, amount, unit: enum [days, months, ...])
        enums = [a for a, s in props.items() if _unit_enum(s)]
        if len(nums) == 1 and len(enums) == 1:
            roles |= {nums[0]: "amount", enums[0]: "unit"}
    if len(roles) == 1 or not _all_required_have_roles(tool, roles):
        return None, None
    minus = bool(names & _MINUS_WORDS) or bool(re.match(r"\s*subtract", text))
    return {"op": "date_add", "roles": roles, "constants": {"sign": -1 if minus else 1}}, None


def _currency(
    tool: ToolSpec, names: set[str], text: str
) -> tuple[dict[str, Any] | None, str | None] | None:
    """A currency conversion's semantics, the reason it cannot be computed, or None when the
    tool is not a currency conversion with an amount."""
    converts = names & {"convert", "conversion", "exchange"} or re.search(r"\bconver(t|sion)", text)
    if not (names & _CURRENCY_WORDS or re.search(r"\bcurrenc(y|ies)\b", text)) or not converts:
        return None
    props = tool.properties
    nums = [a for a, s in props.items() if schema_type(s) in {"integer", "number"}]
    rate = next((a for a in nums if "rate" in W.split_words(a)), None)
    precision = next(
        (a for a in nums if W.identifier(a) in {"precision", "decimals", "decimal_places"}), None
    )
    amounts = [a for a in nums if a not in {rate, precision}]
    codes = [a for a, s in props.items() if schema_type(s) in {None, "string"}]
    if len(amounts) != 1 or len(codes) != 2:
        return None
    roles = {amounts[0]: "x", codes[0]: "unit_in", codes[1]: "unit_out"}
    if precision:
        roles[precision] = "precision"
    if rate:
        roles[rate] = "rate"
    if not _all_required_have_roles(tool, roles):
        return None
    documented = " ".join(
        [
            tool.description,
            *(str(s.get("description", "")) for s in props.values() if isinstance(s, dict)),
        ]
    )
    table = {f"{a}/{b}": r for a, r, b in _RATE_TABLE.findall(documented)}
    if rate is None and not table:
        return None, (
            "a currency conversion, but the definition gives no rate (no rate argument and no "
            "fixed rate table such as '1 USD = 0.92 EUR'); served as a lookup"
        )
    return {"op": "currency", "roles": roles, "constants": {"rates": table}}, None
