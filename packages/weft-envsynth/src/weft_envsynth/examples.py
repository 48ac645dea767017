"""Example values the definitions give for an argument or a documented response property.

Schema `examples` / `example` / `default`, and examples written in prose ("e.g. TIC-0001",
"for example 'AAPL'", "such as NYC, LAX", "like `main`", "format: ORD-12345"). The seed fills
rows with them and with values in their format (shapes.py), so the state holds what the tool's
author had in mind and what a user of the tool would ask about. Prose is read only where a value
is unmistakable (quoted, or a short token right after a marker): sentences, placeholders and
values of the wrong type or outside the enum are dropped rather than seeded as junk.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable
from typing import Any

from weft_core.models import Entity, EntityField, ToolSpec
from weft_core.models.env import FieldType

Scalar = str | int | float | bool

MAX_EXAMPLES = 8
_SCAN = 32  # entries of a schema list looked at: a huge list is a data dump, not examples
_MAX_LEN = 64
_MAX_TEXT = 4000  # characters of prose scanned (descriptions can be whole manuals)

_Q = "'\"`\u2018\u2019\u201c\u201d"
_QUOTED = re.compile(
    r"\s*(['\"`\u2018\u201c])([^'\"`\u2018\u2019\u201c\u201d\n]{1,64})[" + _Q + "]"
)
_SEP = re.compile(r"\s*(?:,\s*(?:or\s+|and\s+)?|/|\bor\b|\band\b)\s*", re.I)
_BARE_SEP = re.compile(r"\s*,\s*(?:or\s+|and\s+)?|\s+(?:or|and)\s+", re.I)
# Markers after which an unquoted token is a value; `like` and bare `example` only take quoted
# values ("works like a charm", "an example ticket").
_MARKER = re.compile(
    r"(?<![\w-])(?P<m>e\.\s?g\.?|eg\.|for\s+example|for\s+instance|such\s+as|ex\.|"
    r"examples?\s*:|format\s*:|like)(?![\w])\s*[:,]?",
    re.I,
)
_QUOTED_ONLY = {"like"}
# An unquoted segment ends at a bracket, a clause break or a sentence's full stop.
_SEGMENT_END = re.compile(r"[)\]};\n]|\.(?:\s|$)|\s[-\u2013\u2014]\s|:\s")
# Words that start prose, never a value ("e.g. the id of the user"), and values a schema generator
# or a lazy author writes in place of an example (OpenAPI's `"example": "string"`).
_PROSE = {
    "a", "an", "the", "any", "all", "some", "this", "that", "these", "those", "your", "my", "its",
    "their", "it", "to", "of", "in", "on", "for", "with", "and", "or", "by", "if", "is", "are",
    "be", "when", "which", "what", "etc", "via", "see", "use", "using",
}  # fmt: skip
_JUNK = {
    "string", "str", "value", "values", "text", "id", "ids", "number", "numbers", "name", "names",
    "none", "null", "nil", "example", "examples", "n/a", "undefined", "unknown", "tbd", "foo",
    "bar", "baz", "placeholder", "integer", "int", "boolean", "bool", "float", "object",
}  # fmt: skip
_PLACEHOLDER = re.compile(
    r"[<>{}\[\]]|\.\.\.|\u2026|^(?:x+|\?+|_+|-+|\*+|#+|0+)$|your[_\- ]|^\$[A-Z_]+$|^x{3,}", re.I
)
_FORMAT_MASK = re.compile(r"YYYY|yyyy|\bMM\b.*\bDD\b|HH:mm|hh:mm")
_SENTENCE_SPLIT = re.compile(r"\n+|;\s|(?<!\be\.g)(?<!\bi\.e)(?<!\bex)(?<!\bvs)\.\s+")
_INT = re.compile(r"[+-]?\d{1,18}")
_NUM = re.compile(r"[+-]?(?:\d{1,18}(?:\.\d{1,12})?|\.\d{1,12})")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?"
)


def schema_values(schema: Any) -> list[Any]:
    """`examples`, `example` and `default` of a property schema (and of its anyOf/oneOf
    branches), best first; anything may come back, `typed` sorts it out."""
    if not isinstance(schema, dict):
        return []
    out: list[Any] = []
    for key in ("examples", "example"):
        v = schema.get(key)
        if isinstance(v, list):
            out += v[:_SCAN]
        elif isinstance(v, dict):  # OpenAPI's named examples: {name: {"value": ...}}
            out += [x.get("value") for x in list(v.values())[:_SCAN] if isinstance(x, dict)]
        elif v is not None:
            out.append(v)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for o in options[:_SCAN]:
                if isinstance(o, dict) and o.get("type") != "null":
                    out += schema_values(o)
    if "default" in schema and not isinstance(schema["default"], list | dict):
        out.append(schema["default"])
    return out


def text_values(text: str) -> list[str]:
    """Values a description gives after an example marker ("e.g. TIC-0001", "such as NYC, LAX")."""
    text = text[:_MAX_TEXT] if isinstance(text, str) else ""
    out: list[str] = []
    for m in _MARKER.finditer(text):
        marker = re.sub(r"\s+", " ", m.group("m").lower())
        rest = text[m.end() :]
        quoted = _quoted_run(rest)
        if quoted:
            out += quoted
        elif marker not in _QUOTED_ONLY:
            out += _bare_run(rest, strict=marker == "such as")
    return out


def _quoted_run(rest: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while len(out) < MAX_EXAMPLES:
        q = _QUOTED.match(rest, pos)
        if q is None:
            break
        out.append(q.group(2).strip())
        sep = _SEP.match(rest, q.end())
        if sep is None or not sep.group(0):
            break
        pos = sep.end()
    return out


def _bare_run(rest: str, *, strict: bool) -> list[str]:
    """Unquoted values: short tokens (or a capitalised name, "New York") up to the clause's end.
    After "such as" a lone lower-case word is prose ("such as creating tickets"): only a list or
    tokens that look like values count."""
    end = _SEGMENT_END.search(rest)
    segment = rest[: end.start() if end else 120][:120]
    items: list[str] = []
    for raw in _BARE_SEP.split(segment):
        item = raw.strip().strip(".,:!?")
        words = item.split()
        if not words:
            break
        if words[0].lower() in _PROSE:
            break
        if len(words) == 1 or (len(words) <= 3 and all(w[:1].isupper() for w in words)):
            items.append(item)
            continue
        if _value_like(words[0]):  # "TIC-0001 for the first ticket"
            items.append(words[0].strip(".,:"))
        break
    if strict and len(items) < 2 and not all(_value_like(i) for i in items):
        return []
    return items


def _value_like(token: str) -> bool:
    return bool(re.search(r"\d|[A-Z]|[-_.@:/#]", token[1:] if token[:1].isupper() else token))


def mentioned(tool: ToolSpec, arg: str) -> list[str]:
    """Values the tool's own description gives for `arg`, in a line or clause that names it and
    no other argument (the values of "ticket_id and user_id, e.g. 42" belong to neither)."""
    text = tool.description[:_MAX_TEXT] if isinstance(tool.description, str) else ""
    if arg not in text:
        return []
    others = [a for a in tool.properties if a != arg and len(a) > 1]

    def names(a: str, clause: str) -> bool:
        return re.search(rf"(?<![\w-]){re.escape(a)}(?![\w-])", clause) is not None

    out: list[str] = []
    for clause in _SENTENCE_SPLIT.split(text):
        if names(arg, clause) and not any(names(o, clause) for o in others):
            out += text_values(clause)
    return out


def argument_values(tool: ToolSpec, arg: str) -> list[Any]:
    """Every candidate for an argument: its schema, its description, the tool's description."""
    schema = tool.properties.get(arg)
    desc = schema.get("description", "") if isinstance(schema, dict) else ""
    return [*schema_values(schema), *text_values(str(desc)), *mentioned(tool, arg)]


def typed(values: Iterable[Any], ftype: FieldType, enum: list[str] | None = None) -> list[Scalar]:
    """The candidates a field of `ftype` can hold, as that type: deduplicated, capped, junk
    and values outside the enum dropped (the enum wins: it is the field's whole domain)."""
    out: list[Scalar] = []
    seen: set[tuple[type, Scalar]] = set()
    for v in values:
        t = _as_type(v, ftype)
        if t is None or (enum and str(t) not in enum):
            continue
        if (type(t), t) not in seen:
            seen.add((type(t), t))
            out.append(t)
        if len(out) >= MAX_EXAMPLES:
            break
    return out


def _as_type(v: Any, ftype: FieldType) -> Scalar | None:
    if ftype == "json" or v is None or isinstance(v, list | dict | tuple):
        return None
    if ftype == "boolean":
        if isinstance(v, bool):
            return v
        s = str(v).strip().lower()
        return {"true": True, "false": False}.get(s)
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if ftype == "integer":
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            return int(v) if v.is_integer() else None
        s = str(v).strip()
        return int(s) if _INT.fullmatch(s) else None
    if ftype == "number":
        if isinstance(v, int | float):
            return v
        s = str(v).strip()
        return float(s) if _NUM.fullmatch(s) else None
    text = _clean(v)
    if text is None:
        return None
    if ftype == "date":
        return text if _DATE.fullmatch(text) and _parses(text, dt.date.fromisoformat) else None
    if ftype == "datetime":
        iso = text.replace("Z", "+00:00")
        ok = _DATETIME.fullmatch(text) and _parses(iso, dt.datetime.fromisoformat)
        return text if ok else None
    return text


def _clean(v: Any) -> str | None:
    """A string example worth seeding, or None for junk."""
    if not isinstance(v, str | int | float):
        return None
    s = str(v).strip().strip(_Q).strip()
    if not s or len(s) > _MAX_LEN or "\n" in s or not s.isprintable():
        return None
    if s.lower() in _JUNK or _PLACEHOLDER.search(s):
        return None
    if _FORMAT_MASK.search(s) and not re.search(r"\d", s):  # "YYYY-MM-DD" is a format, no date
        return None
    words = s.split()
    # A sentence is prose about the value, not one: many words, or several ending in a stop.
    if len(words) > 6 or (len(words) > 2 and s.endswith(".")):
        return None
    return s


def _parses(s: str, parse: Any) -> bool:
    try:
        parse(s)
    except ValueError:
        return False
    return True


def merged(field: EntityField, values: Iterable[Any]) -> EntityField:
    """`field` with `values` added to its examples (several tools document the same field)."""
    combined = typed([*field.examples, *values], field.type, field.enum)
    return field if combined == field.examples else field.model_copy(update={"examples": combined})


def share_key_examples(entities: list[Entity]) -> list[Entity]:
    """A reference documented with examples ("customer_id: e.g. CUS-1042") gives them to the key
    it references when that key has none of its own: the referenced rows are those ids."""
    by = {e.name: e for e in entities}
    found: dict[str, list[Any]] = {}
    for e in entities:
        for f in e.fields:
            if f.foreign_key and f.examples:
                found.setdefault(f.foreign_key.split(".")[0], []).extend(f.examples)
    out: list[Entity] = []
    for e in entities:
        key = next((f for f in e.fields if f.primary_key), None)
        if key is None or key.examples or e.name not in found or e.name not in by:
            out.append(e)
            continue
        fields = [merged(f, found[e.name]) if f.primary_key else f for f in e.fields]
        out.append(e.model_copy(update={"fields": fields}))
    return out
