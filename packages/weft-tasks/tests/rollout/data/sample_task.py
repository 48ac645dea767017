"""The sample two-MCP task used across the views, harness and rollout tests.

A CRM and a helpdesk share one customer (Ada). Three atomic tasks: look the customer up (crm),
upgrade her tier using the id from the lookup (crm), open a ticket about it (helpdesk).
"""

from __future__ import annotations

import importlib.util
import shutil
import sqlite3
from pathlib import Path

from weft_core.models import (
    AllowedChange,
    AtomicTask,
    CallMade,
    DiffContains,
    EdgeKind,
    EntityBinding,
    FieldEquals,
    NoOtherChanges,
    ReferenceCall,
    ReturnContains,
    RowExists,
    SnapshotRef,
    TaskEdge,
    TaskGraph,
    TaskInput,
    TaskNode,
)

ENV_DIR = Path(__file__).parent / "sample_env"


def build_bundle(name: str, dest: Path) -> Path:
    """Copy the bundle folder to `dest/name` and build its seed.sqlite from models.py."""
    target = dest / name
    shutil.copytree(ENV_DIR / name, target, ignore=shutil.ignore_patterns("__pycache__"))
    spec = importlib.util.spec_from_file_location(f"_sample_models_{name}", target / "models.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    conn = sqlite3.connect(target / "seed.sqlite")
    for stmt in [*mod.DDL, *mod.SEED]:
        conn.execute(stmt)
    conn.commit()
    conn.close()
    return target


def sample_graph(snapshots: dict[str, SnapshotRef] | None = None) -> TaskGraph:
    lookup = AtomicTask(
        id="crm.lookup_customer",
        mcp="crm",
        intent="Look up the customer account with email ada@example.com",
        inputs=[TaskInput(name="email", description="customer email", value="ada@example.com")],
        tool_chain=["get_customer_by_email"],
        reference_calls=[
            ReferenceCall(
                tool="get_customer_by_email",
                arguments={"email": "{{email}}"},
                bind={"customer_id": "id"},
            )
        ],
        outputs={"customer_id": "the customer's id"},
    )
    upgrade = AtomicTask(
        id="crm.upgrade_tier",
        mcp="crm",
        intent="Upgrade that customer to the gold tier",
        inputs=[
            TaskInput(name="customer_id", source="upstream"),
            TaskInput(name="tier", description="new tier", value="gold"),
        ],
        tool_chain=["update_customer_tier"],
        reference_calls=[
            ReferenceCall(
                tool="update_customer_tier",
                arguments={"customer_id": "{{customer_id}}", "tier": "{{tier}}"},
            )
        ],
        writes=True,
    )
    ticket = AtomicTask(
        id="helpdesk.open_ticket",
        mcp="helpdesk",
        intent="Open a high-priority support ticket about the tier upgrade",
        inputs=[
            TaskInput(name="customer_email", description="customer email", value="ada@example.com"),
            TaskInput(name="customer_name", description="customer name", value="Ada Lovelace"),
            TaskInput(name="subject", description="ticket subject", value="Gold tier upgrade"),
            TaskInput(name="priority", description="priority", value="high"),
        ],
        tool_chain=["create_ticket"],
        reference_calls=[
            ReferenceCall(
                tool="create_ticket",
                arguments={
                    "customer_email": "{{customer_email}}",
                    "subject": "{{subject}}",
                    "priority": "{{priority}}",
                },
                bind={"ticket_id": "id"},
            )
        ],
        writes=True,
        outputs={"ticket_id": "the new ticket's id"},
    )
    nodes = [
        TaskNode(
            id="n1",
            task=lookup,
            intent=lookup.intent,
            inputs=lookup.inputs,
            outcomes={"customer_id": "customer id"},
            checks=[
                CallMade(
                    id="n1.call",
                    mcp="crm",
                    tool="get_customer_by_email",
                    arguments={"email": "ada@example.com"},
                ),
                ReturnContains(
                    id="n1.ret", mcp="crm", tool="get_customer_by_email", value={"id": 1}
                ),
            ],
        ),
        TaskNode(
            id="n2",
            task=upgrade,
            intent=upgrade.intent,
            inputs=[
                TaskInput(
                    name="customer_id", source="upstream", from_node="n1", from_output="customer_id"
                ),
                TaskInput(name="tier", description="new tier", value="gold"),
            ],
            checks=[
                FieldEquals(
                    id="n2.tier",
                    mcp="crm",
                    table="customer",
                    where={"id": 1},
                    field="tier",
                    value="gold",
                ),
                NoOtherChanges(
                    id="n2.only",
                    mcp="crm",
                    allowed=[AllowedChange(table="customer", change="update")],
                ),
            ],
        ),
        TaskNode(
            id="n3",
            task=ticket,
            intent=ticket.intent,
            inputs=ticket.inputs,
            outcomes={"ticket_id": "ticket number"},
            checks=[
                RowExists(
                    id="n3.ticket",
                    mcp="helpdesk",
                    table="ticket",
                    where={"customer_email": {"$binding": "customer.email"}, "priority": "high"},
                ),
                DiffContains(
                    id="n3.diff",
                    mcp="helpdesk",
                    table="ticket",
                    change="insert",
                    where={"customer_email": "ada@example.com"},
                ),
            ],
        ),
    ]
    return TaskGraph(
        id="sample-upgrade-and-ticket",
        objective="Move Ada Lovelace to the gold tier and open a support ticket recording it",
        profile="Standard",
        nodes=nodes,
        edges=[
            TaskEdge(source="n1", target="n2", kind=EdgeKind.INFORMATION, fields=["customer_id"]),
            TaskEdge(source="n2", target="n3", kind=EdgeKind.STATE),
        ],
        bindings=[
            EntityBinding(
                name="customer",
                entity="customer",
                value={"id": 1, "name": "Ada Lovelace", "email": "ada@example.com"},
                refs={"crm": "customer", "helpdesk": "ticket"},
            )
        ],
        order=["n1", "n2", "n3"],
        initial_snapshots=snapshots or {},
    ).sealed()
