"""Task and state revision (§3.2.2): rebind an input, re-ground a node's initial state, or drop a
node — only the attributed node changes, and the task semantics of every other node (and every
view, which is built from the graph) stay as they were.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from weft_core.checks import values_equal
from weft_core.models import SnapshotRef, TaskGraph, TaskNode
from weft_evolve.exceptions import EvolveRuntimeError
from weft_evolve.models import ReferenceReplay

# "order.order_id of order ORD-1" names an existing object's field; "new order.status" does not.
_ENTITY_FIELD = re.compile(r"\b([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*) of\b")


def _candidate_value(
    graph: TaskGraph, node: TaskNode, name: str, replay: ReferenceReplay | None
) -> tuple[Any, str] | None:
    """A value for input `name` that the task itself vouches for and the initial state holds:
    the node's fixture rows (the field its description names), then the entity bindings."""
    inp = next((i for i in node.inputs if i.name == name), None) or next(
        (i for i in node.task.inputs if i.name == name), None
    )
    initial = replay.initial.get(node.task.mcp) if replay else None
    candidates: list[tuple[Any, str]] = []
    if inp is not None:
        for entity, field in _ENTITY_FIELD.findall(inp.description):
            for row in node.task.seed_rows.get(entity, []):
                if row.get(field) is not None:
                    candidates.append((row[field], f"fixture row {entity}.{field}"))
    # An input describing a new value ("new order.status") has no source in the task: only
    # inputs that name an existing object's field are rebound.
    for b in graph.bindings:
        if name in b.value:
            candidates.append((b.value[name], f"binding {b.name}.{name}"))
    for value, why in candidates:
        if initial is None or any(
            values_equal(r.get(f), value)
            for rows in initial.tables.values()
            for r in rows.values()
            for f in (
                [name] + [fld for _e, fld in _ENTITY_FIELD.findall(inp.description if inp else "")]
            )
            if f in r
        ):
            return value, why
    return None


def rebind(
    graph: TaskGraph, node_id: str, input_name: str | None, replay: ReferenceReplay | None
) -> tuple[TaskGraph | None, list[str]]:
    """Give the node's input the value its fixture rows or bindings name; None when nothing in
    the task supplies one (the caller then drops the node)."""
    node = graph.node(node_id)
    names = [input_name] if input_name else [i.name for i in node.inputs]
    changes: list[str] = []
    new_inputs = {i.name: i for i in node.inputs}
    new_task_inputs = {i.name: i for i in node.task.inputs}
    for name in names:
        if name is None:
            continue
        found = _candidate_value(graph, node, name, replay)
        if found is None:
            continue
        value, why = found
        cur = new_inputs.get(name) or new_task_inputs.get(name)
        if cur is not None and values_equal(cur.value, value):
            continue
        if name in new_inputs:
            new_inputs[name] = new_inputs[name].model_copy(
                update={"value": value, "source": "given"}
            )
        if name in new_task_inputs:
            new_task_inputs[name] = new_task_inputs[name].model_copy(
                update={"value": value, "source": "given"}
            )
        changes.append(f"{node_id}.{name}: {cur.value if cur else None!r} -> {value!r} ({why})")
    if not changes:
        return None, []
    task = node.task.model_copy(
        update={"inputs": [new_task_inputs[i.name] for i in node.task.inputs]}
    )
    new_node = node.model_copy(
        update={"inputs": [new_inputs[i.name] for i in node.inputs], "task": task}
    )
    nodes = [new_node if n.id == node_id else n for n in graph.nodes]
    return _revised(graph, nodes=nodes), changes


def drop_node(graph: TaskGraph, node_id: str) -> tuple[TaskGraph | None, list[str]]:
    """Remove the node, every node that needs its outputs, their edges and checks."""
    gone = {node_id}
    grew = True
    while grew:
        grew = False
        for n in graph.nodes:
            if n.id not in gone and any(
                i.source == "upstream" and i.from_node in gone for i in n.inputs
            ):
                gone.add(n.id)
                grew = True
    nodes = [n for n in graph.nodes if n.id not in gone]
    if not nodes:
        return None, []
    return (
        _revised(
            graph,
            nodes=nodes,
            edges=[e for e in graph.edges if e.source not in gone and e.target not in gone],
            order=[o for o in graph.order if o not in gone],
            final_checks=[c for c in graph.final_checks if c.id.split(".")[0] not in gone],
            initial_snapshots={
                m: s
                for m, s in graph.initial_snapshots.items()
                if any(n.task.mcp == m for n in nodes)
            },
        ),
        [f"dropped node(s) {sorted(gone)}"],
    )


def snapshot_file(uri: str, roots: Sequence[Path] = ()) -> Path | str:
    """Where the bytes of snapshot `uri` can be read: for a content address (`sha256:<hex>`, what
    tasks store), the blob in one of `roots` (a MegaMCP data dir, its object store, a corpus's
    `snapshots/` folder) whose bytes hash to it; otherwise `uri` itself (a path or fsspec URL)."""
    from weft_core.refs import address_digest

    sha = address_digest(uri)
    if sha is None:
        return uri
    for root in roots:
        for cand in (
            root / "objects" / "blobs" / sha[:2] / sha,
            root / "blobs" / sha[:2] / sha,
            root / "snapshots" / f"{sha}.sqlite",
            root / f"{sha}.sqlite",
        ):
            if cand.is_file() and hashlib.sha256(cand.read_bytes()).hexdigest() == sha:
                return cand
    raise EvolveRuntimeError(
        f"snapshot {uri} is held in none of {[str(r) for r in roots]} (EvolveWorld.snapshot_roots)"
    )


def _read_snapshot(uri: str, dest: Path, roots: Sequence[Path] = ()) -> None:
    import fsspec

    with fsspec.open(str(snapshot_file(uri, roots)), "rb") as src, dest.open("wb") as out:
        shutil.copyfileobj(src, out)


async def reground(
    graph: TaskGraph,
    node_id: str,
    client: Any,
    tables: list[str] | None = None,
    snapshot_roots: Sequence[Path] = (),
) -> tuple[TaskGraph | None, list[str]]:
    """Put the node's fixture rows back into its MCP's initial snapshot (missing rows inserted,
    differing fields restored for `tables`), check the DB's integrity and store it in MegaMCP as
    a new immutable snapshot."""
    node = graph.node(node_id)
    mcp = node.task.mcp
    ref = graph.initial_snapshots.get(mcp)
    if ref is None or not node.task.seed_rows:
        return None, []
    changes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="weft-evolve-") as tmp:
        db = Path(tmp) / "snapshot.sqlite"
        _read_snapshot(ref.uri, db, snapshot_roots)
        conn = sqlite3.connect(db)
        try:
            for table, rows in node.task.seed_rows.items():
                cols = {r[1]: r for r in conn.execute(f'PRAGMA table_info("{table}")')}
                pk = [r[1] for r in sorted(cols.values(), key=lambda r: r[5]) if r[5] > 0]
                if not cols or len(pk) != 1:
                    continue
                key = pk[0]
                for row in rows:
                    row = {k: v for k, v in row.items() if k in cols}
                    if key not in row:
                        continue
                    have = conn.execute(
                        f'SELECT * FROM "{table}" WHERE "{key}" = ?', (row[key],)
                    ).fetchone()
                    if have is None:
                        names = ", ".join(f'"{c}"' for c in row)
                        conn.execute(
                            f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" for _ in row)})',
                            list(row.values()),
                        )
                        changes.append(f"{mcp}.{table}: inserted {key}={row[key]!r}")
                    elif tables is None or table in tables:
                        current = dict(
                            zip(
                                [
                                    d[0]
                                    for d in conn.execute(
                                        f'SELECT * FROM "{table}" LIMIT 0'
                                    ).description
                                ],
                                have,
                                strict=False,
                            )
                        )
                        diff = {c: v for c, v in row.items() if not values_equal(current.get(c), v)}
                        if diff:
                            sets = ", ".join(f'"{c}" = ?' for c in diff)
                            conn.execute(
                                f'UPDATE "{table}" SET {sets} WHERE "{key}" = ?',
                                [*diff.values(), row[key]],
                            )
                            changes.append(f"{mcp}.{table} {row[key]!r}: restored {sorted(diff)}")
            conn.commit()
            ok = conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            fk = conn.execute("PRAGMA foreign_key_check").fetchall()
        finally:
            conn.close()
        if not changes:
            return None, []
        if not ok or fk:
            return None, [
                f"re-grounded snapshot fails integrity ({'ok' if ok else 'corrupt'}, {len(fk)} FK violations)"
            ]
        uri = await client.put_snapshot(mcp, db)
        import hashlib

        sha = hashlib.sha256(db.read_bytes()).hexdigest()
    snaps = dict(graph.initial_snapshots)
    snaps[mcp] = SnapshotRef(mcp=mcp, uri=uri, sha256=sha, workspace_uri=ref.workspace_uri)
    return _revised(graph, initial_snapshots=snaps), changes


def _revised(graph: TaskGraph, **changes: Any) -> TaskGraph:
    data = graph.model_dump(mode="json")
    for k, v in changes.items():
        data[k] = (
            [x.model_dump(mode="json") if hasattr(x, "model_dump") else x for x in v]
            if isinstance(v, list)
            else (
                {m: s.model_dump(mode="json") for m, s in v.items()} if isinstance(v, dict) else v
            )
        )
    data["version"] = graph.version + 1
    data["content_hash"] = None
    return TaskGraph.model_validate(data).sealed()
