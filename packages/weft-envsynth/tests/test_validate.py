"""Execution-based validation: correct bundles pass, seeded faults are caught and classified."""

from __future__ import annotations

from pathlib import Path

from weft_core.models import EntityModel, MCPSpec
from weft_envsynth._internal.assemble import build_seed, write_sources
from weft_envsynth.analyze import analyze_programmatic
from weft_envsynth.backend import backend
from weft_envsynth.contracts import contracts
from weft_envsynth.plans import BackendPlan, ValidationReport
from weft_envsynth.revise import relax_schema
from weft_envsynth.schema import schema_programmatic
from weft_envsynth.seed import seed_programmatic
from weft_envsynth.validate import validate


def _build(
    tmp: Path, spec: MCPSpec, *, mutate_plan=None, model: EntityModel | None = None
) -> tuple[ValidationReport, EntityModel]:
    a = analyze_programmatic(spec)
    good = schema_programmatic(spec, a)
    m = model or good
    cs, _, _ = contracts(spec, a, good)
    plan, _ = backend(spec, good, cs)
    if mutate_plan:
        plan = BackendPlan(routes=[mutate_plan(r) for r in plan.routes])
    write_sources(tmp, spec, m, cs, plan, format_code=False)
    build_seed(tmp, seed_programmatic(m, spec))
    return validate(tmp, spec, m, cs), m


def test_correct_bundle_passes_every_check(tmp_path: Path, helpdesk_spec: MCPSpec) -> None:
    report, _ = _build(tmp_path, helpdesk_spec)
    assert report.failing_tools() == {}
    names = {c.name for c in report.checks}
    assert {
        "listed_with_schema",
        "normal_all_fields",
        "normal_required_only",
        "boundary_unknown_id",
        "boundary_wrong_type",
        "boundary_missing_required",
        "boundary_enum_edge",
        "boundary_enum_outside",
        "boundary_precondition",
        "boundary_unknown_reference",
        "boundary_empty_id",
    } <= names
    assert len(report.passed_tools([t.name for t in helpdesk_spec.tools])) == 9


def test_route_that_never_commits_is_a_state_access_error(
    tmp_path: Path, helpdesk_spec: MCPSpec
) -> None:
    report, _ = _build(
        tmp_path,
        helpdesk_spec,
        mutate_plan=lambda r: (
            r.model_copy(update={"commit": False}) if r.tool == "update_ticket" else r
        ),
    )
    failing = report.failing_tools()
    assert set(failing) == {"update_ticket"}
    assert {c.category for c in failing["update_ticket"]} == {"runtime"}
    assert any("not persisted" in c.detail for c in failing["update_ticket"])


def test_route_that_writes_the_wrong_field_is_a_mapping_error(
    tmp_path: Path, helpdesk_spec: MCPSpec
) -> None:
    def wrong(r):
        if r.tool != "update_ticket":
            return r
        a = dict(r.assignments)
        a["description"] = a.pop("subject")  # the subject argument lands in description
        return r.model_copy(update={"assignments": a})

    report, _ = _build(tmp_path, helpdesk_spec, mutate_plan=wrong)
    failing = report.failing_tools()
    assert set(failing) == {"update_ticket"}
    assert "mapping" in {c.category for c in failing["update_ticket"]}


def test_schema_that_rejects_valid_values_is_structural_and_relaxable(
    tmp_path: Path, helpdesk_spec: MCPSpec
) -> None:
    a = analyze_programmatic(helpdesk_spec)
    good = schema_programmatic(helpdesk_spec, a)
    ticket = good.entity("ticket")
    narrow = [
        f.model_copy(update={"enum": ["low", "normal", "high"]}) if f.name == "priority" else f
        for f in ticket.fields
    ]
    bad = good.model_copy(
        update={
            "entities": [
                ticket.model_copy(update={"fields": narrow}) if e.name == "ticket" else e
                for e in good.entities
            ]
        }
    )
    report, _ = _build(tmp_path, helpdesk_spec, model=bad)
    failing = report.failing_tools()
    cats = {c.category for recs in failing.values() for c in recs}
    assert "create_ticket" in failing and "structural" in cats
    feedback = [c.detail for recs in failing.values() for c in recs]
    relaxed, notes = relax_schema(bad, feedback)
    assert relaxed.entity("ticket").field("priority").enum is None and notes


def test_workspace_tools_checked_against_files(tmp_path: Path, example) -> None:
    spec = example("files")
    report, _ = _build(tmp_path, spec)
    assert report.failing_tools() == {}
    escapes = [c for c in report.checks if c.name == "boundary_path_escape"]
    assert escapes and all(c.passed for c in escapes)
