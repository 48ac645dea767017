"""Builds the test EnvBundles: real FastMCP server modules plus the artifacts envsynth would write.

`build_bundles(dest)` copies each server package, builds `seed.sqlite` from its DDL and seed
rows, and writes spec.json (from the server's own tools/list), entities.json, contracts.json and
manifest.json with weft-core models.
"""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

from weft_core.models import (
    ArgMapping,
    ContractSet,
    Entity,
    EntityField,
    EntityModel,
    EnvBundleManifest,
    MCPSpec,
    StateKind,
    StateTransition,
    ToolCertification,
    ToolContract,
    ToolSpec,
)

HERE = Path(__file__).parent / "bundles"
DOMAINS = {"crm": "CRM", "helpdesk": "Support", "billing": "Finance", "notes": "Productivity"}
DESCRIPTIONS = {
    "crm": "Customer relationship management: customer accounts, tiers and contact data.",
    "helpdesk": "Support helpdesk: requesters open tickets that agents work and close.",
    "billing": "Billing: invoices issued to customers by email, and their payment.",
    "notes": "A notes workspace: text files for reports and memos.",
}


def F(name: str, type_: str = "string", **kw: Any) -> EntityField:
    return EntityField(name=name, type=type_, **kw)  # type: ignore[arg-type]


ENTITIES: dict[str, list[Entity]] = {
    "crm": [
        Entity(
            name="customer",
            key="id",
            fields=[
                F("id", "integer", primary_key=True, nullable=False),
                F("name", nullable=False),
                F("email", unique=True, nullable=False),
                F("tier", enum=["bronze", "silver", "gold"]),
                F("city"),
            ],
        ),
    ],
    "helpdesk": [
        Entity(
            name="requester",
            key="id",
            fields=[
                F("id", "integer", primary_key=True, nullable=False),
                F("email", unique=True, nullable=False),
                F("name", nullable=False),
            ],
        ),
        Entity(
            name="ticket",
            key="id",
            fields=[
                F("id", "integer", primary_key=True, nullable=False),
                F("requester_id", "integer", nullable=False, foreign_key="requester.id"),
                F("subject", nullable=False),
                F("status", enum=["open", "closed"]),
                F("priority", enum=["low", "normal", "high"]),
            ],
        ),
    ],
    "billing": [
        Entity(
            name="invoice",
            key="id",
            fields=[
                F("id", "integer", primary_key=True, nullable=False),
                F("customer_email", nullable=False),
                F("amount", "number", nullable=False),
                F("status", enum=["unpaid", "paid"]),
                F("memo"),
            ],
        ),
    ],
    "notes": [],
}


def M(
    argument: str, entity: str | None = None, field: str | None = None, role: str = "value"
) -> ArgMapping:
    return ArgMapping(argument=argument, entity=entity, field=field, role=role)  # type: ignore[arg-type]


def C(
    tool: str, op: str, entity: str | None, mappings: list[ArgMapping], **kw: Any
) -> ToolContract:
    kind = StateKind.WORKSPACE if op.startswith("file_") else StateKind.DATABASE
    writes = [entity] if entity and op in ("create", "update", "delete", "action") else []
    return ToolContract(
        tool=tool,
        state_kind=kind,
        operation=op,
        entity=entity,
        mappings=mappings,  # type: ignore[arg-type]
        reads=[entity] if entity else [],
        writes=writes,
        **kw,
    )


CONTRACTS: dict[str, list[ToolContract]] = {
    "crm": [
        C("find_customer", "search", "customer", [M("email", "customer", "email", "filter")]),
        C("get_customer", "read", "customer", [M("customer_id", "customer", "id", "key")]),
        C("list_customers", "list", "customer", [M("tier", "customer", "tier", "filter")]),
        C(
            "create_customer",
            "create",
            "customer",
            [
                M("name", "customer", "name"),
                M("email", "customer", "email"),
                M("tier", "customer", "tier"),
            ],
        ),
        C(
            "update_customer",
            "update",
            "customer",
            [
                M("customer_id", "customer", "id", "key"),
                M("tier", "customer", "tier"),
                M("city", "customer", "city"),
            ],
        ),
        C("delete_customer", "delete", "customer", [M("customer_id", "customer", "id", "key")]),
    ],
    "helpdesk": [
        C("find_requester", "search", "requester", [M("email", "requester", "email", "filter")]),
        C(
            "create_ticket",
            "create",
            "ticket",
            [
                M("requester_id", "requester", "id", "reference"),
                M("subject", "ticket", "subject"),
                M("priority", "ticket", "priority"),
            ],
        ),
        C("get_ticket", "read", "ticket", [M("ticket_id", "ticket", "id", "key")]),
        C(
            "close_ticket",
            "action",
            "ticket",
            [M("ticket_id", "ticket", "id", "key")],
            transitions=[
                StateTransition(
                    entity="ticket", field="status", from_values=["open"], to_value="closed"
                )
            ],
        ),
        C("list_tickets", "list", "ticket", [M("status", "ticket", "status", "filter")]),
    ],
    "billing": [
        C(
            "find_invoices",
            "search",
            "invoice",
            [M("customer_email", "invoice", "customer_email", "filter")],
        ),
        C("get_invoice", "read", "invoice", [M("invoice_id", "invoice", "id", "key")]),
        C(
            "create_invoice",
            "create",
            "invoice",
            [
                M("customer_email", "invoice", "customer_email"),
                M("amount", "invoice", "amount"),
                M("memo", "invoice", "memo"),
            ],
        ),
        C(
            "pay_invoice",
            "action",
            "invoice",
            [M("invoice_id", "invoice", "id", "key")],
            transitions=[
                StateTransition(
                    entity="invoice", field="status", from_values=["unpaid"], to_value="paid"
                )
            ],
        ),
    ],
    "notes": [
        C("write_note", "file_write", None, [M("path", role="path"), M("content", role="content")]),
        C("read_note", "file_read", None, [M("path", role="path")]),
        C("list_notes", "file_list", None, [M("folder", role="path")]),
        C("delete_note", "file_delete", None, [M("path", role="path")]),
    ],
}


def _load_module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(
        name, path / "__init__.py", submodule_search_locations=[str(path)]
    )
    assert spec and spec.loader
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[name] = pkg
    spec.loader.exec_module(pkg)
    return importlib.import_module(f"{name}.server"), importlib.import_module(f"{name}.models")


def _tools(server_mod: Any) -> list[ToolSpec]:
    mcp = server_mod.create_server()
    tools = asyncio.run(mcp.list_tools()) if not _running_loop() else None
    assert tools is not None, "build_bundles must run outside an event loop"
    return [
        ToolSpec(name=t.name, description=t.description or "", input_schema=t.parameters)
        for t in tools
    ]


def _running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def build_bundles(
    dest: Path, names: tuple[str, ...] = ("crm", "helpdesk", "billing", "notes")
) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for name in names:
        target = dest / name
        shutil.copytree(HERE / name, target, ignore=shutil.ignore_patterns("__pycache__"))
        server_mod, models_mod = _load_module(
            target, f"_weft_fixture_{name}_{abs(hash(str(dest)))}"
        )
        con = sqlite3.connect(target / "seed.sqlite")
        con.execute("PRAGMA user_version = 1")  # a real (header-bearing) DB even with no tables
        for stmt in [*models_mod.DDL, *models_mod.SEED]:
            con.execute(stmt)
        con.commit()
        con.close()
        spec = MCPSpec(
            name=name,
            domain=DOMAINS[name],
            description=DESCRIPTIONS[name],
            tools=_tools(server_mod),
        )
        spec.save(target / "spec.json")
        EntityModel(mcp=name, entities=ENTITIES[name]).save(target / "entities.json")
        ContractSet(mcp=name, contracts=CONTRACTS[name]).save(target / "contracts.json")
        EnvBundleManifest(
            name=name,
            domain=DOMAINS[name],
            description=DESCRIPTIONS[name],
            spec_hash=spec.compute_hash(),
            schema_revision="fixture",
            tools=[
                ToolCertification(name=t.name, state_kind=c.state_kind, certified=True)
                for t in spec.tools
                for c in CONTRACTS[name]
                if c.tool == t.name
            ],
        ).save(target / "manifest.json")
        out[name] = target
    return out
