"""Stockroom tasks: composed tasks of T atomic turns, each one stock change checked on the DB."""

from __future__ import annotations

import hashlib
import random
import sqlite3
from pathlib import Path

from weft_core.models import AtomicTask, SnapshotRef, TaskGraph, TaskNode
from weft_train.rl.tree import TurnTask

MCP = "st"
SKUS = [f"{c}{d}" for c in "ABCDEFGH" for d in range(10)]
SYSTEM = "Tools: st_set, st_add, st_remove; arguments sku, qty. Call one tool, then reply Done."


def initial_qty(sku: str) -> int:
    return 5 + SKUS.index(sku) * 7 % 5


def write_seed(path: Path) -> Path:
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INTEGER NOT NULL)")
        con.executemany("INSERT INTO stock VALUES (?, ?)", [(s, initial_qty(s)) for s in SKUS])
    con.close()
    return path


def snapshot_ref(path: Path, uri: str) -> SnapshotRef:
    return SnapshotRef(mcp=MCP, uri=uri, sha256=hashlib.sha256(path.read_bytes()).hexdigest())


def _turn(rng: random.Random, sku: str) -> tuple[str, str, int, int]:
    op, qty = rng.choice(["set", "add", "remove"]), rng.randint(1, 5)
    start = initial_qty(sku)
    request, expected = {
        "set": (f"Set the stock of {sku} to {qty}.", qty),
        "add": (f"Add {qty} units to {sku}.", start + qty),
        "remove": (f"Remove {qty} units from {sku}.", start - qty),
    }[op]
    return op, request, qty, expected


def make_tasks(
    n: int, turns: int, seed: int, snapshot: SnapshotRef, prefix: str = "task"
) -> list[TaskGraph]:
    rng = random.Random(seed)
    graphs = []
    for i in range(n):
        nodes = []
        for t, sku in enumerate(rng.sample(SKUS, turns)):
            op, request, qty, expected = _turn(rng, sku)
            atomic = AtomicTask(
                id=f"{prefix}{i}-n{t}",
                mcp=MCP,
                intent=request,
                tool_chain=[op],
                reference_calls=[{"tool": op, "arguments": {"sku": sku, "qty": qty}}],  # type: ignore[list-item]
                writes=True,
            )
            check = {"kind": "field_equals", "table": "stock", "where": {"sku": sku},
                     "field": "qty", "value": expected}  # fmt: skip
            nodes.append(TaskNode(id=f"n{t}", task=atomic, intent=request, checks=[check]))  # type: ignore[list-item]
        graphs.append(
            TaskGraph(
                id=f"{prefix}{i}",
                objective="Update the stockroom",
                nodes=nodes,
                order=[n.id for n in nodes],
                initial_snapshots={MCP: snapshot},
            )
        )
    return graphs


def turn_task(graph: TaskGraph) -> TurnTask:
    return TurnTask.from_graph(graph, SYSTEM)


def reference_reply(graph: TaskGraph, node_id: str) -> tuple[str, str]:
    """The answer key of one turn (warm-up demonstrations and `reference` runs only)."""
    call = graph.node(node_id).task.reference_calls[0]
    args = ",".join(f'"{k}":{v!r}'.replace("'", '"') for k, v in call.arguments.items())
    return f'<tool_call>{{"name":"{MCP}_{call.tool}","arguments":{{{args}}}}}</tool_call>', "Done."
