from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from weft_tasks.atomic.bundle import load_bundle
from weft_tasks.atomic.library import load_library, save_library
from weft_tasks.atomic.orthogonality import filter_orthogonal, tool_coverage
from weft_tasks.atomic.synthesis import certify

from .conftest import InProcessValidator


async def test_programmatic_certification_reaches_full_coverage(
    bundle_dirs: dict[str, Path],
) -> None:
    for name in ("crm", "helpdesk", "billing", "notes"):
        bundle = load_bundle(bundle_dirs[name])
        state = await certify(bundle, InProcessValidator(), budget=3, target=1.0)
        assert state.coverage == pytest.approx(1.0), (
            name,
            state.uncovered,
            [f.diagnostic for f in state.failures],
        )
        assert state.stop_reason == "target coverage reached"
        # retained chains are orthogonal and cover what the state says
        kept, dropped = filter_orthogonal(state.retained)
        assert len(kept) == len(state.retained) and not dropped
        assert tool_coverage(state.retained, bundle.tools) == state.coverage
        assert all(t.evidence and t.evidence.passed for t in state.retained)


async def test_failures_feed_back_and_validated_tasks_are_not_regenerated(
    bundle_dirs: dict[str, Path],
) -> None:
    bundle = load_bundle(bundle_dirs["crm"])
    validator = InProcessValidator(fail_tools=["find_customer"])  # every chain through find fails
    state = await certify(bundle, validator, budget=3, target=1.0)
    assert len(validator.seen) == len(set(validator.seen))  # nothing validated twice
    assert state.round == 3 and state.stop_reason == "round budget exhausted"
    assert any("injected failure" in f.diagnostic for f in state.failures)
    # later rounds retried the failed tools in their single-step form, which does not use find_customer
    chains = [t.tool_chain for t in state.retained]
    assert ["update_customer"] in chains and ["delete_customer"] in chains
    assert "find_customer" in state.uncovered
    assert state.rounds[0].failed > 0 and len(state.rounds) == 3


async def test_budget_of_one_round_stops_after_first_validation(
    bundle_dirs: dict[str, Path],
) -> None:
    bundle = load_bundle(bundle_dirs["crm"])
    state = await certify(
        bundle, InProcessValidator(fail_tools=["find_customer"]), budget=1, target=1.0
    )
    assert state.round == 1 and state.stop_reason == "round budget exhausted"


async def test_no_new_candidates_stops(bundle_dirs: dict[str, Path]) -> None:
    bundle = load_bundle(bundle_dirs["crm"])
    # every tool fails forever: rounds run out of fresh variants before a large budget
    state = await certify(
        bundle, InProcessValidator(fail_tools=bundle.tools), budget=50, target=1.0
    )
    assert state.stop_reason == "no new candidates" and state.retained == []


async def test_library_round_trip(bundle_dirs: dict[str, Path], tmp_path: Path) -> None:
    bundle = load_bundle(bundle_dirs["helpdesk"])
    state = await certify(bundle, InProcessValidator(), budget=2)
    folder = save_library(tmp_path / "lib", bundle, state)
    (lib,) = load_library(tmp_path / "lib")
    assert lib.mcp == "helpdesk" and lib.domain == "Support"
    assert [t.id for t in lib.tasks] == [t.id for t in state.retained]
    assert lib.manifest.coverage == state.coverage
    tests = sorted((folder / "tests").glob("test_*.py"))
    assert len(tests) == len(state.retained)
    compile(tests[0].read_text(), str(tests[0]), "exec")
    report = json.loads((folder / "validation.json").read_text())
    assert report["coverage"] == state.coverage
    # overwrite in place leaves one folder, no temp leftovers
    save_library(tmp_path / "lib", bundle, state)
    assert sorted(p.name for p in (tmp_path / "lib").iterdir()) == ["helpdesk"]


async def test_llm_strategy_catches_wrong_drafts(bundle_dirs: dict[str, Path], scripted) -> None:
    bundle = load_bundle(bundle_dirs["crm"])
    good = {
        "intent": "Look up the customer with email grace@example.com and report her city",
        "inputs": [{"name": "email", "value": "grace@example.com"}],
        "reference_calls": [{"tool": "find_customer", "arguments": {"email": "{{email}}"}}],
        "checks": [{"kind": "return_contains", "tool": "find_customer", "value": "Arlington"}],
    }
    unknown_tool = {**good, "reference_calls": [{"tool": "fire_customer", "arguments": {}}]}
    bad_template = {
        **good,
        "reference_calls": [{"tool": "find_customer", "arguments": {"email": "{{mail}}"}}],
    }
    wrong_check = {
        **good,
        "intent": "wrong city",
        "checks": [{"kind": "return_contains", "tool": "find_customer", "value": "Paris"}],
    }
    llm = scripted(
        [
            "I think the tasks are fine.",  # not JSON: retried with the error
            json.dumps({"tasks": [good, unknown_tool, bad_template, wrong_check]}),
            AIMessage(
                content="", tool_calls=[{"name": "LLMTaskBatch", "args": {"tasks": []}, "id": "1"}]
            ),
        ]
    )
    state = await certify(bundle, InProcessValidator(), llm=llm, budget=2, target=1.0)
    kinds = {f.diagnostic.split(" ")[0] for f in state.failures}
    assert [t.intent for t in state.retained] == [good["intent"]]
    diags = " | ".join(f.diagnostic for f in state.failures)
    assert "fire_customer" in diags and "mail" in diags and "Paris" in diags, kinds
    assert state.stop_reason == "no new candidates"
