"""The attribution agent: rules decide what the evidence settles; a model only sees open units,
and its verdicts are held against the evidence (scripted fakes, including wrong verdicts)."""

from weft_core.models import CheckOutcome
from weft_core.testing import ScriptedChatModel
from weft_evolve.attribution.agent import AttributionContext, attribute, evidence_packet
from weft_evolve.attribution.rules import diagnose_node
from weft_evolve.models import Component, FailureUnit, Fix

from ..conftest import make_replay


def _unit(graph, node_id, kind="failed_checkpoint", **kw) -> FailureUnit:
    return FailureUnit(
        unit_id=f"r1:{node_id}",
        kind=kind,
        trace_id="r1",
        task_id=graph.id,
        task_hash=graph.content_hash or "",
        node_id=node_id,
        view="agentic/full",
        harness="react",
        model="m",
        failed_checks=[
            CheckOutcome(check_id=f"{node_id}.c1", kind="field_equals", passed=False, reason="x")
        ],
        **kw,
    )


def _ctx(graph, replay, contracts, llm=None) -> AttributionContext:
    diags = {(graph.id, n.id): diagnose_node(graph, replay, n.id, contracts) for n in graph.nodes}
    return AttributionContext(
        graphs={graph.id: graph}, diagnoses=diags, replays={graph.id: replay}, llm=llm
    )


def test_valid_task_failure_is_the_policys(graph, contracts):
    replay = make_replay(graph)
    [att] = attribute([_unit(graph, "n2")], _ctx(graph, replay, contracts))
    assert att.component is Component.POLICY and att.decided_by == "rules"
    assert att.target.fix is Fix.NONE
    assert any(e.source == "reference_replay" for e in att.evidence)


def test_backend_fault_is_the_environments_with_its_evidence(graph, contracts):
    replay = make_replay(graph, update_error="internal_error: RuntimeError")
    [att] = attribute([_unit(graph, "n2")], _ctx(graph, replay, contracts))
    assert att.component is Component.ENVIRONMENT
    assert (att.target.mcp, att.target.tool, att.target.fix) == (
        "shop",
        "update_order",
        Fix.REVISE_ROUTE,
    )
    assert "never declares" in att.evidence[0].detail


def test_wrong_write_is_the_environments(graph, contracts):
    replay = make_replay(graph, after_status="pending")  # the update "succeeded" but wrote nothing
    [att] = attribute([_unit(graph, "n2")], _ctx(graph, replay, contracts))
    assert att.component is Component.ENVIRONMENT and att.rule == "write_mismatch"


def test_checks_rejecting_an_accepted_reference_are_the_verifiers(graph, contracts):
    bad = graph.model_copy(deep=True)
    bad.nodes[1].checks[0].value = "shipped-X"
    replay = make_replay(bad)
    [att] = attribute([_unit(bad, "n2")], _ctx(bad, replay, contracts))
    assert att.component is Component.VERIFIER and att.target.check_ids == ["n2.c1"]


def test_model_verdict_contradicting_evidence_is_overruled(graph, contracts):
    # A rubric disagreement on a valid node is open; the model blames the environment, but every
    # reference call conforms to its contract: the audit overrules it.
    replay = make_replay(graph)
    llm = ScriptedChatModel(
        [
            {
                "component": "environment",
                "fix": "revise_route",
                "confidence": 0.9,
                "reason": "tool broken",
            }
        ]
    )
    unit = _unit(graph, "n2", kind="rubric_disagreement", rubric_failures=["order.note is set"])
    [att] = attribute([unit], _ctx(graph, replay, contracts, llm))
    assert att.component is Component.POLICY
    assert att.overridden and "model said environment" in att.overridden
    assert llm.prompts, "the model saw the evidence packet"


def test_model_verdict_consistent_with_evidence_stands(graph, contracts):
    replay = make_replay(graph)
    llm = ScriptedChatModel(
        [
            '{"component": "policy", "confidence": 0.8, "evidence_refs": [0], "reason": "agent skipped"}'
        ]
    )
    [att] = attribute(
        [_unit(graph, "n2", kind="rubric_disagreement")], _ctx(graph, replay, contracts, llm)
    )
    assert att.component is Component.POLICY and att.decided_by == "llm"


def test_garbage_model_answer_falls_back(graph, contracts):
    replay = make_replay(graph)
    llm = ScriptedChatModel(["I think it is fine."])
    [att] = attribute(
        [_unit(graph, "n2", kind="rubric_disagreement")], _ctx(graph, replay, contracts, llm)
    )
    assert att.decided_by == "programmatic" and att.overridden and "unusable" in att.overridden


def test_rules_never_ask_the_model(graph, contracts):
    replay = make_replay(graph, update_error="internal_error: boom")
    llm = ScriptedChatModel([])  # any call would raise ScriptExhaustedError
    [att] = attribute([_unit(graph, "n2")], _ctx(graph, replay, contracts, llm))
    assert att.component is Component.ENVIRONMENT and not llm.prompts


def test_packet_numbers_its_facts(graph, contracts):
    replay = make_replay(graph)
    ctx = _ctx(graph, replay, contracts)
    packet = evidence_packet(_unit(graph, "n2"), ctx)
    assert packet["node"]["tools"] == ["update_order"] and packet["facts"]


def test_model_blaming_a_complete_verifier_is_overruled(graph, contracts):
    replay = make_replay(graph)
    llm = ScriptedChatModel(
        [{"component": "verifier", "fix": "regenerate_verifier", "confidence": 0.7}]
    )
    [att] = attribute(
        [_unit(graph, "n2", kind="rubric_disagreement")], _ctx(graph, replay, contracts, llm)
    )
    assert att.component is Component.POLICY and "pin every effect" in (att.overridden or "")
