"""Values for synthesized calls and fixture rows, from a field's type and a JSON schema: a new
value that differs from the current one (an update that changes something), a value that fits an
argument's schema, and whether a stored value can be passed where a schema is expected."""

from __future__ import annotations

from typing import Any

from weft_core.models import EntityField


def new_value(f: EntityField, current: Any, salt: int, schema: dict[str, Any] | None = None) -> Any:
    schema = plain(schema or {})
    if schema.get("type") in ("array", "object"):
        return schema_value(schema, f.name, salt)
    enum = schema.get("enum") or f.enum
    if enum:
        others = [v for v in enum if v != current]
        return others[salt % len(others)] if others else enum[0]
    kind = f.type
    if schema.get("type") in ("integer", "number", "boolean"):
        kind = schema["type"]
    if kind == "integer":
        value = (current if isinstance(current, int) else 0) + 3 + salt
        return clamp(value, schema)
    if kind == "number":
        amount = round((current if isinstance(current, (int, float)) else 0) + 12.5 + salt, 2)
        return clamp(amount, schema)
    if kind == "boolean":
        return not bool(current)
    if kind == "date":
        return f"2026-0{1 + salt % 9}-1{salt % 9}"
    if kind == "datetime":
        return f"2026-0{1 + salt % 9}-1{salt % 9}T10:30:00"
    if kind == "json":
        return {"note": f"weft {salt}"}
    if "email" in f.name:
        return f"weft.{f.name}.{salt}@example.org"
    return f"Weft {f.name.replace('_', ' ')} {salt}"


def clamp(value: float, schema: dict[str, Any]) -> Any:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if hi is not None and value > hi:
        value = hi
    if lo is not None and value < lo:
        value = lo
    return value


def plain(schema: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of a nullable schema (`anyOf [T, null]`, `type: [T, "null"]`)."""
    for branch in schema.get("anyOf") or schema.get("oneOf") or []:
        if isinstance(branch, dict) and branch.get("type") not in (None, "null"):
            return {**{k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}, **branch}
    kind = schema.get("type")
    if isinstance(kind, list):
        real = [k for k in kind if k != "null"]
        return {**schema, "type": real[0] if real else "string"}
    return schema


def fits(value: Any, schema: dict[str, Any]) -> bool:
    """Whether a stored value can be passed where `schema` is expected."""
    kind = plain(schema).get("type")
    if value is None:
        return False
    kinds: dict[str, tuple[type, ...]] = {
        "string": (str,),
        "integer": (int,),
        "number": (int, float),
        "boolean": (bool,),
        "array": (list,),
        "object": (dict,),
    }
    return isinstance(value, kinds.get(kind, (object,))) if isinstance(kind, str) else True


def schema_value(schema: dict[str, Any], name: str, salt: int) -> Any:
    schema = plain(schema)
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "integer":
        return clamp(1 + salt, schema)
    if kind == "number":
        return clamp(1.5 + salt, schema)
    if kind == "boolean":
        return True
    if kind == "array":
        items = plain(schema.get("items") or {"type": "string"})
        if items.get("type", "string") == "string" and not items.get("enum"):
            # list items are often tokens (tags, ids): no spaces
            return [f"weft-{(name.rstrip('s') or name).replace('_', '-')}-{salt}"]
        return [schema_value(items, name, salt)]
    if kind == "object":
        return {}
    if "email" in name:
        return f"weft.{salt}@example.org"
    return f"weft {name.replace('_', ' ')} {salt}"
