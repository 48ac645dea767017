"""Results shaped like the documented response (copied verbatim into an EnvBundle).

A route answers in the bundle's own terms (`{"tweet": row}`, `{"items": rows, "count": ...}`,
`{"deleted": true, "tweet_id": 3}`); a caller reads the fields the tool's documented output
names (`{"id", "username", "content"}`, `{"matching_tweets": [...]}`). `shaped` builds the
documented fields from what the call touched, in the documented order and types:

* a field is taken from the answer's own fields, else from the record the call read or wrote,
  else from the call's arguments, matched by name: exact, then spelled alike (`currentSpeed` /
  `current_speed`), then `id` / `<kind>_id` for the record's key, then the name less its
  qualifiers (`new_balance` -> `balance`, `card_balance` -> `balance`, `deleted_status` ->
  `deleted`);
* an array is the records a listing found (`[]` when it found none), each shaped like the
  documented item, or the one column a list of scalars names (`order_history: [integer]` -> the
  orders' keys); an object is the matching field of the answer, else the same record shaped
  like it (a documented wrapper `{"result": {...}}` or `{"stats": {...}}`); a free-form object
  (`messages: dict`) is that record;
* a write's boolean status (`added_status`, `success`) is true, its message (`message`,
  `comment_status: string`) is the confirmation its definition implies; nothing else is made up:
  a documented field with no source is null (an array of a listing: empty);
* values are converted to the documented type where that loses nothing (`"3"` -> 3, 2.0 -> 2);
* a documented scalar response (`{"type": "string"}`) is answered as that scalar.

The answer's own fields follow the documented ones, so what the bundle's checks read stays.
"""

from __future__ import annotations

import json
import re
from typing import Any

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_TYPES = {"dict": "object", "float": "number", "int": "integer", "bool": "boolean", "str": "string",
          "list": "array", "tuple": "array", "double": "number", "long": "integer"}  # fmt: skip
# Words that qualify a field without naming what it holds.
_QUALIFIERS = {"new", "current", "updated", "total", "the", "value", "status", "info", "data"}
_FLAGS = {"success", "ok", "succeeded", "done", "result"}
_MESSAGES = {"message", "msg", "confirmation", "detail", "details", "note", "status", "result"}
_DEPTH = 6


def _words(name: str) -> list[str]:
    out: list[str] = []
    for part in re.split(r"[^A-Za-z0-9]+", name):
        out += [w.lower() for w in _CAMEL.split(part) if w]
    return out


def _norm(name: str) -> str:
    return "_".join(_words(name))


def _singular(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _type(schema: Any) -> str | None:
    """The documented JSON type (aliases like 'dict' / 'float' read as JSON's); None when absent
    or contradictory (several non-null types)."""
    if not isinstance(schema, dict):
        return None
    t = schema.get("type")
    if isinstance(t, list):
        kinds = {_TYPES.get(x, x) for x in t if isinstance(x, str) and x != "null"}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(t, str):
        return _TYPES.get(t, t)
    if isinstance(schema.get("properties"), dict):
        return "object"
    if isinstance(schema.get("items"), dict):
        return "array"
    return None


def coerce(value: Any, schema: Any) -> Any:
    """`value` in the documented type where the conversion loses nothing; else unchanged."""
    t = _type(schema)
    if value is None or t is None:
        return value
    if t == "integer" and not isinstance(value, bool):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"-?\d{1,18}", value.strip()):
            return int(value.strip())
    elif t == "number" and not isinstance(value, bool):
        if isinstance(value, str):
            try:
                return float(value) if value.strip() else value
            except ValueError:
                return value
    elif t == "string":
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            return str(value)
        # A list or record documented as a string stays structured (likely a slip of the
        # documentation; the type probe reports it).
    elif t == "boolean" and isinstance(value, str) and value.lower() in {"true", "false"}:
        return value.lower() == "true"
    elif t == "array":
        if isinstance(value, str) and value.strip().startswith("["):
            try:
                parsed = json.loads(value)
            except ValueError:
                return value
            return parsed if isinstance(parsed, list) else value
        if isinstance(value, dict | list):
            return value
        return [value]
    elif t == "object" and isinstance(value, str) and value.strip().startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


class _Call:
    """What one successful call touched: the answer, its records, the arguments."""

    def __init__(self, data: Any, args: dict[str, Any], shape: dict[str, Any]) -> None:
        self.data = data if isinstance(data, dict) else {}
        self.args = args
        self.entity: str = shape.get("entity") or ""
        self.key: str = shape.get("key") or ""
        self.key_named = bool(shape.get("key_named"))
        self.labels: list[str] = [k for k in shape.get("labels") or [] if isinstance(k, str)]
        self.write = bool(shape.get("write"))
        self.message: str = shape.get("message") or ""
        rows = self.data.get("items")
        if not isinstance(rows, list):
            lists = [v for v in self.data.values() if isinstance(v, list) and v and
                     all(isinstance(r, dict) for r in v)]  # fmt: skip
            rows = lists[0] if len(lists) == 1 else None
        self.rows: list[dict[str, Any]] | None = (
            [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else None
        )
        record = self.data.get(self.entity) if self.entity else None
        if not isinstance(record, dict) and self.rows is not None and len(self.rows) == 1:
            record = self.rows[0]
        self.record: dict[str, Any] = record if isinstance(record, dict) else {}


def _lookup(name: str, src: dict[str, Any], call: _Call) -> tuple[bool, Any]:
    """(found, value) of documented field `name` in `src` by the matching rules above."""
    if name in src:
        return True, src[name]
    norm = _norm(name)
    byname = {_norm(k): k for k in src if isinstance(k, str)}
    if norm in byname:
        return True, src[byname[norm]]
    ent = _norm(call.entity)
    if call.key and call.key in src and norm in {"id", f"{ent}_id", "key", "identifier"}:
        return True, src[call.key]
    if norm.endswith("_id") and norm != "id" and "id" in src and norm[:-3] == ent:
        return True, src["id"]
    words = [w for w in norm.split("_") if w not in _QUALIFIERS and w not in ent.split("_")]
    if words and words != norm.split("_"):
        core = "_".join(words)
        for cand, k in byname.items():
            if cand == core or _singular(cand) == _singular(core):
                return True, src[k]
    # The name ends with a column's whole name (`card_balance` -> `balance`); not a bare `id`,
    # which is another record's (`user_id` of a message is not the message's id).
    for cand, k in byname.items():
        if cand not in {"id", "key"} and norm.endswith("_" + cand):
            return True, src[k]
    return False, None


def _scalar_of(row: dict[str, Any], name: str, schema: Any, call: _Call) -> Any:
    """The one value of a record a documented list of scalars means (`order_history:
    [integer]` of orders -> their keys; `user_list: [string]` -> the users' names)."""
    found, value = _lookup(_singular(name), row, call)
    if found and not isinstance(value, dict | list):
        return coerce(value, schema)
    want = _type(schema)
    key_fits = call.key in row and (want is None or _fits(row[call.key], want))
    if key_fits and call.key_named:
        return coerce(row[call.key], schema)
    for k in call.labels:  # what callers name the record by (`stock`), before a made-up key
        if row.get(k) is not None and (want is None or _fits(coerce(row[k], schema), want)):
            return coerce(row[k], schema)
    if key_fits:
        return coerce(row[call.key], schema)
    return next((coerce(v, schema) for v in row.values() if _fits(v, want)), None)


def _fits(value: Any, t: str | None) -> bool:
    if t is None:
        return True
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return {"string": str, "boolean": bool, "array": list, "object": dict}.get(t, object) in type(
        value
    ).__mro__


def _array(name: str, schema: Any, srcs: list[dict[str, Any]], call: _Call, depth: int) -> Any:
    items = schema.get("items") if isinstance(schema, dict) else None
    for src in srcs:
        found, value = _lookup(name, src, call) if name else (False, None)
        if found and isinstance(value, list):
            return [_value(name, items, [v] if isinstance(v, dict) else [], call, depth + 1, v)
                    for v in value]  # fmt: skip
    rows = call.rows if call.rows is not None else [call.record] if call.record else None
    if rows is not None:
        # The records a listing found, or the one record a read or write touched.
        if _type(items) == "object" or items is None:
            return [_object(items or {}, [r], call, depth + 1, keep=r) for r in rows]
        return [_scalar_of(r, name, items, call) for r in rows]
    return None


def _object(
    schema: Any, srcs: list[dict[str, Any]], call: _Call, depth: int, keep: Any = None
) -> Any:
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or not props:
        return keep
    out: dict[str, Any] = {}
    for name, sub in props.items():
        if isinstance(name, str):
            out[name] = _field(name, sub, srcs, call, depth + 1)
    if isinstance(keep, dict):
        out.update({k: v for k, v in keep.items() if k not in out})
    return out


def _value(name: str, schema: Any, srcs: list[dict[str, Any]], call: _Call, depth: int,
           given: Any) -> Any:  # fmt: skip
    """A found value, shaped when the documentation says what is inside it."""
    t = _type(schema)
    if t == "object" and isinstance(given, dict):
        return _object(schema, [given], call, depth, keep=given)
    if t == "array" and isinstance(given, list):
        return _array(name, schema, [{name: given}], call, depth)
    return coerce(given, schema)


def _field(name: str, schema: Any, srcs: list[dict[str, Any]], call: _Call, depth: int) -> Any:
    t = _type(schema)
    if depth > _DEPTH:
        return None
    for src in srcs:
        found, value = _lookup(name, src, call)
        if found and value is not None:
            if t == "array" and not isinstance(value, list | str):
                continue  # a record's scalar is not the documented list: look further
            return _value(name, schema, [src], call, depth, value)
    if t == "array":
        return _array(name, schema, srcs, call, depth)
    if t == "object":
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(props, dict) or not props:
            # A free-form object (`messages: dict`): the record the call touched, if one.
            return dict(call.record) if call.record else None
        # A documented wrapper around the record (`{"result": {...}}`, `{"stats": {...}}`).
        inner = _object(schema, srcs, call, depth)
        if isinstance(inner, dict) and any(v is not None for v in inner.values()):
            return inner
        return None
    norm = _norm(name)
    words = set(norm.split("_"))
    if call.write and t == "boolean" and (words & {"status", "success", "ok"} or norm in _FLAGS):
        return True
    if call.write and t == "string" and call.message and (words & _MESSAGES):
        return call.message
    return None


def shaped(data: Any, args: dict[str, Any], shape: dict[str, Any]) -> Any:
    """The route's answer `data` shaped like the documented response in `shape` (made by
    weft_envsynth.responses: the resolved schema, the record kind and key, the write's message)."""
    schema = shape.get("schema")
    call = _Call(data, args or {}, shape)
    srcs = [s for s in (call.data, call.record, call.args) if s]
    t = _type(schema)
    if t == "object" and isinstance(schema, dict):
        out = _object(schema, srcs, call, 0)
        if not isinstance(out, dict):
            return data
        if isinstance(data, dict):
            for k, v in data.items():
                if k not in out or (out[k] is None and v is not None):
                    out[k] = v  # never a null where the answer had a value
        return out
    if t == "array":
        got = _array("", schema, srcs, call, 0)
        return data if got is None else got
    if t in {"string", "number", "integer", "boolean"}:
        return _scalar(schema, t, srcs, call, data)
    return data


def _scalar(schema: Any, t: str, srcs: list[dict[str, Any]], call: _Call, data: Any) -> Any:
    """A documented scalar answer: the answer's one value of that type, a write's flag or
    confirmation, the record's key, else the answer as text."""
    if not isinstance(data, dict):
        return coerce(data, schema)
    for src in srcs:
        for k, v in src.items():
            if _norm(k) in _MESSAGES | _FLAGS | {"count", "total", "deleted"} and _fits(v, t):
                return v
    if t == "boolean":
        return True  # the call succeeded
    if t == "string" and call.write and call.message:
        return call.message
    if call.key in call.record:
        return coerce(call.record[call.key], schema)
    vals = [v for v in call.data.values() if _fits(v, t)]
    if len(vals) == 1:
        return vals[0]
    return coerce(data, schema) if t == "string" else None
