from __future__ import annotations

from pathlib import Path

from weft_core.models import EnvBundleManifest, MCPSpec, ToolSpec
from weft_envsynth.certify import certify_state, tool_certifications
from weft_envsynth.plans import CheckRecord, ValidationReport
from weft_envsynth.state import EnvSynthState


def test_uncertified_tools_carry_their_reason(helpdesk_spec: MCPSpec) -> None:
    checks = []
    for t in helpdesk_spec.tools:
        checks.append(
            CheckRecord(
                tool=t.name,
                name="normal_all_fields",
                kind="update",
                passed=t.name != "close_ticket",
                category=None if t.name != "close_ticket" else "runtime",
                detail="boom",
            )
        )
    state = EnvSynthState(
        spec=helpdesk_spec,
        out_dir="/x",
        report=ValidationReport(checks=checks),
        uncertified={"list_comments": "no valid contract: x"},
    )
    certs = {c.name: c for c in tool_certifications(state)}
    assert not certs["close_ticket"].certified and "runtime error in normal_all_fields: boom" in (
        certs["close_ticket"].reason or ""
    )
    assert certs["list_comments"].reason == "no valid contract: x"
    assert certs["get_ticket"].certified


def test_nothing_certified_means_no_bundle(tmp_path: Path) -> None:
    spec = MCPSpec(
        name="Lonely",
        tools=[
            ToolSpec(
                name="get_thing",
                input_schema={"type": "object", "properties": {"thing_id": {"type": "string"}}},
            )
        ],
    )
    work = tmp_path / ".work-lonely-1"
    work.mkdir()
    (work / "server.py").write_text("")
    report = ValidationReport(
        checks=[
            CheckRecord(
                tool="get_thing",
                name="normal_all_fields",
                kind="query",
                passed=False,
                category="runtime",
                detail="crash",
            )
        ]
    )
    update = certify_state(
        EnvSynthState(spec=spec, out_dir=str(tmp_path), work_dir=str(work), report=report)
    )
    assert "no tool could be certified" in update["error"]
    assert not work.exists() and not (tmp_path / "lonely").exists()


def test_manifest_is_sealed_and_lists_files(helpdesk_bundle: Path) -> None:
    m = EnvBundleManifest.load(helpdesk_bundle / "manifest.json")
    assert m.certified and m.schema_revision.startswith("0001_")
    assert {"models.py", "server.py", "seed.sqlite", "validation.json", "runtime.py"} <= set(
        m.files
    )
    assert "manifest.json" not in m.files
