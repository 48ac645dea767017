"""Behavioural probes (validate + _internal.behaviourchecks): promises across tools, generated from
the definitions, that a bundle consistent with its own contracts can still break; certification
reports them apart from self-consistency."""

from __future__ import annotations

import json
import re
from pathlib import Path

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth._internal.assemble import build_seed, write_sources
from weft_envsynth._internal.behaviourchecks import documented_fields
from weft_envsynth.analyze import analyze_programmatic
from weft_envsynth.backend import backend
from weft_envsynth.contracts import contracts
from weft_envsynth.plans import ValidationReport
from weft_envsynth.schema import schema_programmatic
from weft_envsynth.seed import seed_programmatic
from weft_envsynth.validate import validate


def _validate(
    tmp: Path, spec: MCPSpec, fault: tuple[str, str, str] | None = None
) -> ValidationReport:
    a = analyze_programmatic(spec)
    m = schema_programmatic(spec, a)
    cs, _, _ = contracts(spec, a, m)
    plan, _ = backend(spec, m, cs)
    write_sources(tmp, spec, m, cs, plan, format_code=False)
    build_seed(tmp, seed_programmatic(m, spec))
    if fault:
        route, old, new = fault
        src = (tmp / "server.py").read_text()
        head, body = src.split(f"def tool_{route}(", 1)
        assert old in body, body[:600]
        (tmp / "server.py").write_text(head + f"def tool_{route}(" + body.replace(old, new, 1))
    return validate(tmp, spec, m, cs)


def _failed(report: ValidationReport, tool: str) -> dict[str, str]:
    return {c.name: c.detail for c in report.checks if c.tool == tool and not c.passed}


def test_a_correct_bundle_keeps_every_promise(tmp_path: Path, helpdesk_spec: MCPSpec) -> None:
    report = _validate(tmp_path, helpdesk_spec)
    probes = [c for c in report.checks if c.kind == "behaviour"]
    assert report.failing_tools() == {}
    assert {c.name for c in probes} >= {
        "behaviour_finds_created",
        "behaviour_update_visible",
        "behaviour_accepts_created_id",
    }
    # list_comments(ticket_id) was asked for the ticket a create just wrote.
    assert any(
        c.tool == "list_comments" and c.name == "behaviour_accepts_created_id" for c in probes
    )


# A listing that serves only the rows it was seeded with: consistent with the DB while validation
# reads the seed (reads run before writes), blind to everything a session writes.
_SEED_ONLY = (
    "list_tickets",
    "return page(rows, body.limit)",
    "import sqlite3 as _sq\n"
    "    from .runtime import BUNDLE_DIR\n"
    "    _seeded = {r[0] for r in _sq.connect(str(BUNDLE_DIR / 'seed.sqlite'))"
    ".execute('SELECT ticket_id FROM ticket')}\n"
    "    return page([r for r in rows if r.ticket_id in _seeded], body.limit)",
)


def test_a_listing_blind_to_new_records_fails_on_behaviour_only(
    tmp_path: Path, helpdesk_spec: MCPSpec
) -> None:
    report = _validate(tmp_path, helpdesk_spec, _SEED_ONLY)
    failed = _failed(report, "list_tickets")
    assert set(failed) == {"behaviour_finds_created"}, failed
    assert "written by create_ticket is not listed" in failed["behaviour_finds_created"]


def test_a_read_refusing_a_new_id_of_another_kind_fails(
    tmp_path: Path, helpdesk_spec: MCPSpec
) -> None:
    # list_comments(ticket_id) answering "not found" for a ticket written after the seed.
    fault = (
        "list_comments",
        "stmt = select(m.Comment)",
        "import sqlite3 as _sq\n"
        "    from .runtime import BUNDLE_DIR, not_found\n"
        "    if body.ticket_id not in {r[0] for r in _sq.connect(str(BUNDLE_DIR / 'seed.sqlite'))"
        ".execute('SELECT ticket_id FROM ticket')}:\n"
        "        raise not_found('ticket', body.ticket_id)\n"
        "    stmt = select(m.Comment)",
    )
    report = _validate(tmp_path, helpdesk_spec, fault)
    failed = _failed(report, "list_comments")
    assert "behaviour_accepts_created_id" in failed, failed


def test_certification_reports_behaviour_apart(tmp_path: Path, helpdesk_spec: MCPSpec) -> None:
    from weft_envsynth import synthesize_spec

    res = synthesize_spec(helpdesk_spec, tmp_path)
    assert res.bundle is not None
    cert = json.loads((Path(res.bundle) / "validation.json").read_text())["certification"]
    assert set(cert) == {"self_consistency", "behaviour"}
    beh, own = cert["behaviour"], cert["self_consistency"]
    assert beh["checks"] > 0 and beh["passed"] == beh["checks"] and beh["tools_failing"] == []
    # Unknown ids and invalid transitions refused are behaviour; wrong types are not.
    rounds = json.loads((Path(res.bundle) / "validation.json").read_text())["rounds"]
    names = {c["name"] for c in rounds[-1]["checks"]}
    assert "boundary_unknown_id" in names and own["checks"] > beh["checks"]


def _tool(out: object) -> ToolSpec:
    return ToolSpec(
        name="get_ticket",
        input_schema={"type": "object", "properties": {"ticket_id": {"type": "string"}}},
        output_schema=out,  # type: ignore[arg-type]
    )


def test_documented_fields_from_the_output_schema_hostile_too() -> None:
    out = {"type": "object", "properties": {"ticket": {}, "sla_due": {"type": "string"}}}
    assert documented_fields(_tool(out)) == ["ticket", "sla_due"]
    assert documented_fields(_tool({"type": "object", "properties": "sla_due"})) == []
    assert documented_fields(_tool({"$ref": "#/definitions/Undefined"})) == []
    assert documented_fields(_tool(None)) == []
    assert re.match(r"^behaviour", "behaviour_documented_fields")


def test_hostile_definitions_do_not_fail_a_correct_bundle(tmp_path: Path) -> None:
    # A scraped limit typed as a string (`first: string`), and a read of one record of another
    # kind filtered by the new id (`get_card(board_id)` on an empty board may rightly refuse).
    def tool(name: str, props: dict[str, object], required: list[str]) -> ToolSpec:
        schema = {"type": "object", "properties": props, "required": required}
        return ToolSpec(name=name, description=name.replace("_", " "), input_schema=schema)

    s = {"type": "string"}
    spec = MCPSpec(
        name="kanban",
        tools=[
            tool("create_board", {"title": s}, ["title"]),
            tool("get_board", {"board_id": s}, ["board_id"]),
            tool("list_boards", {"first": s}, []),
            tool("create_card", {"board_id": s, "text": s}, ["board_id", "text"]),
            tool("get_card", {"board_id": s}, ["board_id"]),
        ],
    )
    report = _validate(tmp_path, spec)
    probes = {(c.tool, c.name): c.passed for c in report.checks if c.kind == "behaviour"}
    assert probes.get(("list_boards", "behaviour_finds_created")) is True, probes
    assert ("get_card", "behaviour_accepts_created_id") not in probes
    assert report.failing_tools() == {}


def test_documented_fields_are_answered_types_reported_not_failing(tmp_path: Path) -> None:
    # BFCL's TicketAPI documents `id: integer` for create_ticket; the record's key is `ticket_id`.
    # The answer carries `id` (the key); the schema made that key a string, which the type probe
    # reports without failing the tool (a disagreement for the schema to settle).
    from weft_envsynth import synthesize_spec

    out = {"type": "object", "properties": {"id": {"type": "integer"}, "title": {}}}
    s = {"type": "string"}
    spec = MCPSpec(
        name="desk",
        tools=[
            ToolSpec(
                name="create_ticket",
                description="Create a ticket",
                input_schema={"type": "object", "properties": {"title": s}, "required": ["title"]},
                output_schema=out,
            ),
            ToolSpec(
                name="get_ticket",
                description="Get a ticket",
                input_schema={
                    "type": "object", "properties": {"ticket_id": s}, "required": ["ticket_id"],
                },
            ),
        ],
    )  # fmt: skip
    res = synthesize_spec(spec, tmp_path)
    assert res.bundle is not None and res.status == "certified", res.uncertified
    cert = json.loads((Path(res.bundle) / "validation.json").read_text())["certification"]
    assert cert["behaviour"]["advisory"] == ["behaviour_documented_types"]
    assert any("id is str, not integer" in f for f in cert["behaviour"]["failures"])
    assert not any("lacks documented fields" in f for f in cert["behaviour"]["failures"])


def test_a_backend_ignoring_the_lifecycle_fails_validation(tmp_path: Path, example) -> None:
    spec = example("orders")
    good = _validate(tmp_path / "good", spec)
    assert good.failing_tools() == {}
    assert any(
        c.tool == "cancel_order" and c.name == "boundary_transition" and c.passed
        for c in good.checks
    )
    # The route cancels whatever order it is given, a shipped or refunded one too.
    report = _validate(tmp_path / "bad", spec, ("cancel_order", "['pending', 'paid']", "[]"))
    assert "boundary_transition" in _failed(report, "cancel_order")
