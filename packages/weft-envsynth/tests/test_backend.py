from __future__ import annotations

import ast

from weft_core.models import MCPSpec
from weft_envsynth.analyze import analyze_programmatic
from weft_envsynth.backend import arg_fields, backend, check_route, render_server
from weft_envsynth.contracts import contracts
from weft_envsynth.schema import schema_programmatic


def _plan(spec: MCPSpec):
    a = analyze_programmatic(spec)
    m = schema_programmatic(spec, a)
    cs, _, _ = contracts(spec, a, m)
    plan, notes = backend(spec, m, cs)
    return m, cs, plan, notes


def test_route_plans_follow_the_contracts(helpdesk_spec: MCPSpec) -> None:
    _m, _cs, plan, notes = _plan(helpdesk_spec)
    assert notes == []
    create = plan.route("create_ticket")
    assert (
        create.references == {"customer_id": "customer"}
        and create.assignments["subject"] == "subject"
    )
    assert plan.route("get_ticket").key_argument == "ticket_id"
    close = plan.route("close_ticket")
    assert close.transition is not None and close.transition.to_value == "closed"
    assert close.assignments == {"resolution": "resolution"}
    assert plan.route("list_tickets").limit_argument == "limit"


def test_rendered_server_is_python_with_one_route_per_tool(helpdesk_spec: MCPSpec) -> None:
    m, _cs, plan, _ = _plan(helpdesk_spec)
    src = render_server(helpdesk_spec, m, plan)
    tree = ast.parse(src)
    routes = [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("tool_")
    ]
    assert len(routes) == len(helpdesk_spec.tools)
    assert src.count("session.commit()") == 6  # every write tool commits
    no_commit = plan.model_copy(
        update={
            "routes": [
                r.model_copy(update={"commit": False}) if r.tool == "update_ticket" else r
                for r in plan.routes
            ]
        }
    )
    assert render_server(helpdesk_spec, m, no_commit).count("session.commit()") == 5
    assert (
        "def create_server() -> FastMCP" in src
        and "from .runtime import" in src
        and "from . import models" in src
    )


def test_awkward_argument_names_become_aliased_identifiers() -> None:
    from weft_core.models import ToolSpec

    t = ToolSpec(
        name="x",
        input_schema={
            "type": "object",
            "properties": {
                "from": {"type": "string"},
                "numResults": {"type": "number"},
                "json": {},
                "user-id": {"type": "string"},
                "user_id": {"type": "string"},
            },
        },
    )
    names = arg_fields(t)
    assert (
        names["from"] == "from_"
        and names["numResults"] == "num_results"
        and names["json"] == "json_"
    )
    assert len(set(names.values())) == len(names)


def test_check_route_finds_static_bugs(helpdesk_spec: MCPSpec) -> None:
    m, cs, plan, _ = _plan(helpdesk_spec)
    r = plan.route("update_ticket").model_copy(update={"assignments": {"nonexistent": "subject"}})
    problems = check_route(r, cs.contract("update_ticket"), helpdesk_spec.tool("update_ticket"), m)
    assert any("ticket.nonexistent does not exist" in p for p in problems)
