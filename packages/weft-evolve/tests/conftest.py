"""Shared evidence for weft-evolve unit tests: a one-MCP shop with a read and an update tool,
its contracts, a two-node task graph and a reference replay built from real DBState objects."""

from __future__ import annotations

from typing import Any

import pytest

from weft_core.models import (
    AtomicTask,
    ContractSet,
    ReferenceCall,
    TaskGraph,
    TaskInput,
    TaskNode,
)
from weft_core.models.check import FieldEquals, ReturnContains
from weft_core.models.env import ArgMapping, ErrorCase, ToolContract
from weft_core.models.ledger import LedgerEntry
from weft_core.state import DBState, TableSchema
from weft_evolve.models import CallRecord, NodeReplay, ReferenceReplay

MCP = "shop"


def db(rows: dict[str, dict[str, Any]]) -> DBState:
    return DBState(
        tables={"order": rows},
        schemas={
            "order": TableSchema(columns=["order_id", "status", "note"], primary_key=["order_id"])
        },
    )


ORDERS = {
    "ORD-1": {"order_id": "ORD-1", "status": "pending", "note": ""},
    "ORD-2": {"order_id": "ORD-2", "status": "pending", "note": ""},
}


@pytest.fixture
def contracts() -> dict[str, ContractSet]:
    read = ToolContract(
        tool="get_order",
        state_kind="database",
        operation="read",
        entity="order",
        mappings=[ArgMapping(argument="order_id", entity="order", field="order_id", role="key")],
        reads=["order"],
        errors=[ErrorCase(condition="order_id not found", message="not_found: order not found")],
    )
    update = ToolContract(
        tool="update_order",
        state_kind="database",
        operation="update",
        entity="order",
        mappings=[
            ArgMapping(argument="order_id", entity="order", field="order_id", role="key"),
            ArgMapping(argument="status", entity="order", field="status", role="value"),
            ArgMapping(argument="note", entity="order", field="note", role="value"),
        ],
        reads=["order"],
        writes=["order"],
        errors=[ErrorCase(condition="order_id not found", message="not_found: order not found")],
    )
    return {MCP: ContractSet(mcp=MCP, contracts=[read, update])}


def _node(
    node_id: str, tool: str, args: dict[str, Any], checks: list[Any], writes: bool
) -> TaskNode:
    inputs = [
        TaskInput(name="order_id", description="order.order_id of order ORD-1", value="ORD-1"),
        *(
            [TaskInput(name="status", description="new order.status", value="shipped")]
            if writes
            else []
        ),
    ]
    task = AtomicTask(
        id=f"t-{node_id}",
        mcp=MCP,
        intent=f"{tool} ORD-1",
        inputs=inputs,
        tool_chain=[tool],
        reference_calls=[ReferenceCall(tool=tool, arguments=args)],
        checks=checks,
        writes=writes,
        seed_rows={"order": [dict(ORDERS["ORD-1"])]},
    )
    return TaskNode(id=node_id, task=task, intent=task.intent, inputs=inputs, checks=checks)


@pytest.fixture
def graph() -> TaskGraph:
    n1 = _node(
        "n1",
        "get_order",
        {"order_id": "{{order_id}}"},
        [ReturnContains(id="n1.c1", mcp=MCP, tool="get_order", value="ORD-1")],
        False,
    )
    n2 = _node(
        "n2",
        "update_order",
        {"order_id": "{{order_id}}", "status": "{{status}}"},
        [
            FieldEquals(
                id="n2.c1",
                mcp=MCP,
                table="order",
                where={"order_id": "ORD-1"},
                field="status",
                value="shipped",
            )
        ],
        True,
    )
    return TaskGraph(id="task-1", objective="ship", nodes=[n1, n2], order=["n1", "n2"]).sealed()


def ledger_entry(
    seq: int, tool: str, args: dict[str, Any], result: Any, *, error: bool = False
) -> LedgerEntry:
    return LedgerEntry(
        seq=seq,
        session_id="s",
        mcp=MCP,
        tool=tool,
        arguments=args,
        result=result,
        is_error=error,
        error_kind="tool_error" if error else None,
    )


def make_replay(
    graph: TaskGraph,
    *,
    read_value: Any = None,
    after_status: str = "shipped",
    update_error: str | None = None,
    outcome_fail: bool = False,
) -> ReferenceReplay:
    from weft_core.checks import evaluate
    from weft_evolve.evidence.replay import node_evidence

    before = db({k: dict(v) for k, v in ORDERS.items()})
    after_rows = {k: dict(v) for k, v in ORDERS.items()}
    if update_error is None:
        after_rows["ORD-1"]["status"] = after_status
    after = db(after_rows)
    rv = read_value if read_value is not None else {"order": dict(ORDERS["ORD-1"])}
    l1 = [ledger_entry(0, "get_order", {"order_id": "ORD-1"}, rv)]
    upd_args = {"order_id": "ORD-1", "status": "shipped"}
    l2 = [
        *l1,
        ledger_entry(
            1,
            "update_order",
            upd_args,
            update_error or {"order": after_rows["ORD-1"]},
            error=update_error is not None,
        ),
    ]
    r = ReferenceReplay(task_id=graph.id, task_hash=graph.content_hash or "", initial={MCP: before})
    r.nodes["n1"] = NodeReplay(
        node_id="n1",
        mcp=MCP,
        calls=[CallRecord(mcp=MCP, tool="get_order", arguments={"order_id": "ORD-1"}, value=rv)],
        before=before,
        after=before,
        ledger=l1,
    )
    r.nodes["n2"] = NodeReplay(
        node_id="n2",
        mcp=MCP,
        calls=[
            CallRecord(
                mcp=MCP,
                tool="update_order",
                arguments=upd_args,
                is_error=update_error is not None,
                error_code=update_error.split(":")[0] if update_error else None,
                text=update_error or "",
                value=None if update_error else {"order": after_rows["ORD-1"]},
            )
        ],
        before=before,
        after=after,
        ledger=l2,
    )
    for nid in r.nodes:
        r.nodes[nid].outcome = evaluate(graph.node(nid).checks, node_evidence(graph, r, nid))
    return r
