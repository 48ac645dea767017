"""Record-graph tools of an EnvBundle (weft_envsynth.graphsem): named records, links between them
and lists of notes on them, kept in the session DB (table weft_graph_record) so snapshots, forks
and restores carry them.

Every call is one transaction and validates its whole batch first: a note added to a record that
does not exist refuses the call and changes nothing. Creating what exists already is skipped (the
result lists what was new); deleting what is not there is not an error."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from weft_core.binding import current_binding

from .runtime import ToolFailure

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS weft_graph_record (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "kind TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, UNIQUE (kind, key))"
)
Kind = dict[str, Any]  # graphsem.RecordKind as a dict


def _connect() -> sqlite3.Connection:
    conn = sqlite3.connect(str(current_binding().db_path), timeout=30)
    conn.execute(_SCHEMA)
    return conn


def _key(kind: Kind, record: dict[str, Any]) -> str:
    return json.dumps([record.get(f) for f in kind["key"]])


def _records(conn: sqlite3.Connection, kind: Kind) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT body FROM weft_graph_record WHERE kind = ? ORDER BY seq", (kind["name"],)
    )
    return [json.loads(r[0]) for r in rows]


def _find(conn: sqlite3.Connection, kind: Kind, name: Any) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT body FROM weft_graph_record WHERE kind = ? AND key = ?",
        (kind["name"], json.dumps([name])),
    ).fetchone()
    return json.loads(row[0]) if row else None


def _save(conn: sqlite3.Connection, kind: Kind, record: dict[str, Any]) -> None:
    conn.execute(
        "UPDATE weft_graph_record SET body = ? WHERE kind = ? AND key = ?",
        (json.dumps(record), kind["name"], _key(kind, record)),
    )


def _delete(conn: sqlite3.Connection, kind: Kind, record: dict[str, Any]) -> int:
    cur = conn.execute(
        "DELETE FROM weft_graph_record WHERE kind = ? AND key = ?",
        (kind["name"], _key(kind, record)),
    )
    return cur.rowcount


def _record(kind: Kind, item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ToolFailure("invalid_arguments", f"each {kind['name']} must be an object")
    out: dict[str, Any] = {}
    for f in kind["fields"]:
        value = item.get(f)
        if f in kind["key"] and not isinstance(value, str):
            raise ToolFailure("invalid_arguments", f"{kind['name']}.{f} is required")
        out[f] = list(value) if f in kind["lists"] and isinstance(value, list) else value
        if f in kind["lists"] and out[f] is None:
            out[f] = []
    return out


def _collections(kinds: list[Kind], output: dict[str, Any]) -> dict[str, Kind]:
    """Output property -> the kind it lists: the documented property whose items have the
    kind's fields, else the argument the kind came from."""
    found: dict[str, Kind] = {}
    for prop, sch in output.items():
        items = sch.get("items") if isinstance(sch, dict) else None
        fields = set(items.get("properties") or {}) if isinstance(items, dict) else set()
        same = [k for k in kinds if fields and fields == set(k["fields"])]
        kind = next((k for k in same if k["collection"] == prop), same[0] if same else None)
        if kind is not None:
            found[prop] = kind
    if not found:
        found = {k["collection"]: k for k in kinds}
    return found


def _view(
    conn: sqlite3.Connection, kinds: list[Kind], output: dict[str, Any], names: set[str] | None
) -> dict[str, Any]:
    """The named records (all when `names` is None) and the links among them, as documented."""
    out: dict[str, Any] = {}
    for prop, kind in _collections(kinds, output).items():
        rows = _records(conn, kind)
        if names is not None:
            if kind["refs"]:
                rows = [r for r in rows if all(r.get(f) in names for f in kind["refs"])]
            else:
                rows = [r for r in rows if r.get(kind["key"][0]) in names]
        out[prop] = rows
    return out


def _confirm(output: dict[str, Any], message: str) -> dict[str, Any]:
    """A documented flag-and-message result: flags true, text fields carry the message."""
    if not output:
        return {"success": True, "message": message}
    out: dict[str, Any] = {}
    for prop, sch in output.items():
        t = sch.get("type") if isinstance(sch, dict) else None
        out[prop] = True if t == "boolean" else message if t == "string" else None
    return out


def graph_tool(
    verb: str, sem: dict[str, Any], kinds: list[Kind], a: dict[str, Any], message: str
) -> dict[str, Any]:
    """Run one record-graph tool call; `a` holds the tool's arguments by their own names."""
    conn = _connect()
    try:
        with conn:
            return _run(conn, verb, sem, kinds, a, message)
    finally:
        conn.close()


def _run(
    conn: sqlite3.Connection,
    verb: str,
    sem: dict[str, Any],
    kinds: list[Kind],
    a: dict[str, Any],
    message: str,
) -> dict[str, Any]:
    output: dict[str, Any] = sem.get("output") or {}
    kind = next((k for k in kinds if k["name"] == sem.get("kind")), None)
    given = a.get(sem["argument"]) if sem.get("argument") else None
    batch = given if isinstance(given, list) else []
    if verb == "read_all":
        return _view(conn, kinds, output, None)
    if verb == "open":
        return _view(conn, kinds, output, {str(n) for n in batch})
    if verb == "search":
        query = str(given or "").lower()
        names: set[str] = set()
        for k in kinds:
            if k["refs"]:
                continue
            for r in _records(conn, k):
                texts = [str(v) for v in r.values() if isinstance(v, str)]
                texts += [str(x) for v in r.values() if isinstance(v, list) for x in v]
                if any(query in t.lower() for t in texts):
                    names.add(str(r.get(k["key"][0])))
        return _view(conn, kinds, output, names)
    if kind is None:
        raise ToolFailure("unsupported", f"graph verb {verb} needs a record kind", 501)
    if verb == "create":
        created: list[dict[str, Any]] = []
        seen: set[str] = set()
        for item in batch:
            rec = _record(kind, item)
            key = _key(kind, rec)
            if key in seen:
                continue
            seen.add(key)
            cur = conn.execute(
                "INSERT OR IGNORE INTO weft_graph_record (kind, key, body) VALUES (?, ?, ?)",
                (kind["name"], key, json.dumps(rec)),
            )
            if cur.rowcount:
                created.append(rec)
        prop = next(iter(_collections([kind], output)), kind["collection"])
        return {prop: created}
    if verb in {"append", "detach"}:
        ref, listed, field = sem["item_ref"], sem["item_list"], sem["target_list"]
        plan: list[tuple[dict[str, Any], list[str]]] = []
        loaded: dict[str, dict[str, Any]] = {}  # items naming the same record share one copy
        for item in batch:
            name = item.get(ref) if isinstance(item, dict) else None
            values = item.get(listed) if isinstance(item, dict) else None
            found = loaded.get(str(name)) or _find(conn, kind, name)
            if found is not None:
                loaded[str(name)] = found
            if found is None:
                if verb == "detach":
                    continue  # removing notes from a record that is gone leaves nothing to do
                raise ToolFailure(
                    "not_found", f"{kind['name'].capitalize()} with name {name} not found", 404
                )
            plan.append((found, [str(v) for v in values or []]))
        results: list[dict[str, Any]] = []
        for rec, values in plan:
            current = list(rec.get(field) or [])
            if verb == "append":
                added = [v for v in dict.fromkeys(values) if v not in current]
                rec[field] = current + added
                results.append({ref: rec[kind["key"][0]], listed: added})
            else:
                rec[field] = [v for v in current if v not in values]
            _save(conn, kind, rec)
        if verb == "detach":
            return _confirm(output, message)
        return _per_item(output, results, ref, listed)
    if verb == "delete":
        names = {str(n) for n in batch}
        for rec in _records(conn, kind):
            if rec.get(kind["key"][0]) in names:
                _delete(conn, kind, rec)
        for link in (k for k in kinds if k["name"] in sem.get("cascade", [])):
            for rec in _records(conn, link):
                if any(rec.get(f) in names for f in link["refs"]):
                    _delete(conn, link, rec)
        return _confirm(output, message)
    if verb == "delete_match":
        for item in batch:
            if isinstance(item, dict):
                _delete(conn, kind, _record(kind, item))
        return _confirm(output, message)
    raise ToolFailure("unsupported", f"graph verb {verb} is not supported", 501)


def _per_item(
    output: dict[str, Any], results: list[dict[str, Any]], ref: str, listed: str
) -> dict[str, Any]:
    """Per-item results under the documented array property, with its item's field names: its
    string field names the record, its array field lists what was added."""
    for prop, sch in output.items():
        items = sch.get("items") if isinstance(sch, dict) else None
        props = items.get("properties") if isinstance(items, dict) else None
        if not isinstance(props, dict):
            continue
        name_f = next((f for f, s in props.items() if s.get("type") == "string"), ref)
        list_f = next((f for f, s in props.items() if s.get("type") == "array"), listed)
        return {prop: [{name_f: r[ref], list_f: r[listed]} for r in results]}
    return {"results": results}
