"""Reading the loose JSON Schemas of real tool specs."""

from __future__ import annotations

from typing import Any

from weft_core.models.env import FieldType


def schema_type(schema: Any) -> str | None:
    """The single JSON type of a property schema, or None when it is absent, mixed or unusable."""
    if not isinstance(schema, dict):
        return None
    t = schema.get("type")
    if isinstance(t, list):
        non_null = [x for x in t if x != "null"]
        t = non_null[0] if len(non_null) == 1 else None
    if t is None:
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list):
                types = {schema_type(o) for o in options} - {"null", None}
                if len(types) == 1:
                    return types.pop()
        enum = schema.get("enum")
        if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
            return "string"
        return None
    return t if isinstance(t, str) else None


def field_type(schema: Any) -> FieldType:
    t = schema_type(schema)
    if t == "string":
        fmt = schema.get("format") if isinstance(schema, dict) else None
        if fmt == "date":
            return "date"
        if fmt == "date-time":
            return "datetime"
        return "string"
    if t == "integer":
        return "integer"
    if t == "number":
        return "number"
    if t == "boolean":
        return "boolean"
    if t is None:
        return "json"
    return "json"


def string_enum(schema: Any) -> list[str] | None:
    if not isinstance(schema, dict):
        return None
    values = schema.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        return list(dict.fromkeys(values))
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for o in options:
                e = string_enum(o)
                if e:
                    return e
    return None


def is_scalar(schema: Any) -> bool:
    return schema_type(schema) in {"string", "integer", "number", "boolean"}
