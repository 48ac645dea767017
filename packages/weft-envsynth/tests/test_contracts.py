from __future__ import annotations

from weft_core.models import MCPSpec
from weft_envsynth.analyze import analyze_programmatic
from weft_envsynth.contracts import check_contract, contracts
from weft_envsynth.schema import schema_programmatic


def test_contract_mappings_reads_writes_errors(helpdesk_spec: MCPSpec) -> None:
    a = analyze_programmatic(helpdesk_spec)
    m = schema_programmatic(helpdesk_spec, a)
    cs, notes, failed = contracts(helpdesk_spec, a, m)
    assert failed == {} and notes == []
    create = cs.contract("create_ticket")
    roles = {mp.argument: (mp.role, mp.field) for mp in create.mappings}
    assert roles["customer_id"] == ("reference", "customer_id")
    assert roles["subject"] == ("value", "subject")
    assert create.writes == ["ticket"] and "customer" in create.reads
    assert any("customer not found" in e.message for e in create.errors)
    close = cs.contract("close_ticket")
    assert close.transitions and any(e.message.startswith("invalid_state") for e in close.errors)
    listing = cs.contract("list_tickets")
    assert {mp.argument: mp.role for mp in listing.mappings}["limit"] == "option"
    assert listing.returns["required"] == ["items", "count", "total"]


def test_check_contract_flags_wrong_mapping(helpdesk_spec: MCPSpec) -> None:
    a = analyze_programmatic(helpdesk_spec)
    m = schema_programmatic(helpdesk_spec, a)
    cs, _, _ = contracts(helpdesk_spec, a, m)
    c = cs.contract("update_ticket")
    bad = c.model_copy(
        update={
            "mappings": [
                mp.model_copy(update={"field": "nonexistent"}) if mp.argument == "subject" else mp
                for mp in c.mappings
            ]
        }
    )
    assert any(
        "missing field ticket.nonexistent" in p
        for p in check_contract(helpdesk_spec.tool("update_ticket"), bad, m)
    )
    unmapped = c.model_copy(update={"mappings": c.mappings[1:]})
    assert any(
        "is not mapped" in p
        for p in check_contract(helpdesk_spec.tool("update_ticket"), unmapped, m)
    )
