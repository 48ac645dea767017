from __future__ import annotations

import pytest

from weft_core.models import MCPSpec, StateKind, ToolSpec
from weft_envsynth.analyze import analyze_programmatic, check_analysis, classify_operation
from weft_envsynth.errors import SpecRejected


def _tool(name: str, props: dict, required: list[str] | None = None, desc: str = "") -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": required or []},
    )


def test_helpdesk_entities_relations_and_effects(helpdesk_spec: MCPSpec) -> None:
    a = analyze_programmatic(helpdesk_spec)
    ticket = next(e for e in a.entities if e.name == "ticket")
    assert ticket.key == "ticket_id" and not ticket.reference_data
    assert ticket.field("customer_id").foreign_key == "customer.customer_id"
    assert ticket.field("employee_id").foreign_key == "employee.employee_id"
    assert set(ticket.field("status").enum or []) >= {"open", "closed", "escalated"}
    # customers are only referenced here: read-only reference rows with the shared key and email
    customer = a.entities[[e.name for e in a.entities].index("customer")]
    assert customer.reference_data and {f.name for f in customer.fields} >= {
        "customer_id",
        "name",
        "email",
    }
    ops = {t.tool: (t.operation, t.entity, t.state_kind) for t in a.tools}
    assert ops["create_ticket"] == ("create", "ticket", StateKind.DATABASE)
    assert ops["list_tickets"][0] == "list"
    assert ops["assign_ticket"][0] == "update"
    assert ops["add_comment"][:2] == ("create", "comment")
    close = a.effect("close_ticket")
    assert close.operation == "action" and close.transitions[0].to_value == "closed"
    assert "closed" not in close.transitions[0].from_values
    assert check_analysis(helpdesk_spec, a) == []


def test_stateless_search_tools_get_reference_data() -> None:
    spec = MCPSpec(
        name="Exa Search",
        tools=[
            _tool(
                "web_search_exa",
                {"query": {"type": "string"}, "numResults": {"type": "number"}},
                ["query"],
                "Search the web",
            ),
            _tool(
                "get_weather", {"city": {"type": "string"}}, ["city"], "Current weather of a city"
            ),
        ],
    )
    a = analyze_programmatic(spec)
    assert {t.state_kind for t in a.tools} == {StateKind.STATELESS}
    assert all(e.reference_data for e in a.entities)
    assert a.effect("web_search_exa").operation == "search"


def test_file_tools_are_workspace_state() -> None:
    for name, op in [
        ("read_file", "file_read"),
        ("write_file", "file_write"),
        ("list_directory", "file_list"),
        ("delete_file", "file_delete"),
    ]:
        assert classify_operation(_tool(name, {"path": {"type": "string"}}))[0] == op


def test_boolean_id_flag_is_not_a_reference() -> None:
    spec = MCPSpec(
        name="x",
        tools=[
            _tool(
                "get_image",
                {"image_id": {"type": "string"}, "include_id": {"type": "boolean"}},
                ["image_id"],
            )
        ],
    )
    a = analyze_programmatic(spec)
    assert {e.name for e in a.entities} == {"image"}


def test_empty_spec_is_rejected() -> None:
    with pytest.raises(SpecRejected, match="no tools"):
        analyze_programmatic(MCPSpec(name="empty", tools=[]))


def test_check_analysis_reports_llm_mistakes(helpdesk_spec: MCPSpec) -> None:
    a = analyze_programmatic(helpdesk_spec)
    broken = a.model_copy(
        update={"tools": [*a.tools[1:], a.tools[0].model_copy(update={"entity": "nope"})]}
    )
    problems = check_analysis(helpdesk_spec, broken)
    assert any("unknown entity 'nope'" in p for p in problems)
