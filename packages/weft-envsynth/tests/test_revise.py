from __future__ import annotations

from weft_core.models import MCPSpec
from weft_envsynth.plans import CheckRecord, ValidationReport
from weft_envsynth.revise import plan_revision
from weft_envsynth.state import EnvSynthState


def _state(spec: MCPSpec, *failures: tuple[str, str]) -> EnvSynthState:
    checks = [
        CheckRecord(tool=t.name, name="listed_with_schema", kind="structural", passed=True)
        for t in spec.tools
    ]
    checks += [
        CheckRecord(
            tool=tool,
            name="normal_all_fields",
            kind="update",
            passed=False,
            category=cat,
            detail=f"{cat} problem",
        )
        for tool, cat in failures
    ]  # type: ignore[arg-type]
    return EnvSynthState(
        spec=spec, out_dir="/tmp/x", report=ValidationReport(round=1, checks=checks)
    )


def test_errors_route_to_the_stage_that_owns_them(helpdesk_spec: MCPSpec) -> None:
    assert (
        plan_revision(_state(helpdesk_spec, ("update_ticket", "runtime")))["revise_target"]
        == "backend"
    )
    assert (
        plan_revision(_state(helpdesk_spec, ("update_ticket", "mapping")))["revise_target"]
        == "contracts"
    )
    plan = plan_revision(
        _state(helpdesk_spec, ("get_ticket", "runtime"), ("create_ticket", "structural"))
    )
    assert plan["revise_target"] == "schema"
    assert plan["redo"] == [
        "create_ticket",
        "get_ticket",
    ]  # only failing tools; passing ones are kept
    assert plan["feedback"] == ["create_ticket: normal_all_fields: structural problem"]
    assert plan_revision(_state(helpdesk_spec))["revise_target"] is None
