"""Verifier generation: checks from an accepted reference pass its evidence, fail when the effect
is missing, and the suspect checks do not block acceptance."""

from weft_core.checks import evaluate
from weft_core.testing import ScriptedChatModel
from weft_evolve.evidence.replay import node_evidence
from weft_evolve.verifier import VerifierContext, VerifierStore, generate_verifier, perturbations
from weft_evolve.verifier.generate import accept_reference

from ..conftest import make_replay


def test_generated_checks_pass_reference_and_fail_perturbations(graph, contracts):
    replay = make_replay(graph)
    v, why = generate_verifier(
        "n2", VerifierContext(graph=graph, replay=replay, contracts=contracts)
    )
    assert why == "ok" and v is not None
    kinds = {c.kind for c in v.checks}
    assert "field_equals" in kinds and "call_made" not in kinds  # never the call sequence
    assert evaluate(v.checks, node_evidence(graph, replay, "n2")).passed
    for name, ev in perturbations(graph, replay, "n2"):
        assert not evaluate(v.checks, ev).passed, name
    assert v.rubric and v.rubric[0].kind == "write"


def test_read_node_pins_the_retrieved_entity(graph, contracts):
    replay = make_replay(graph)
    v, why = generate_verifier(
        "n1", VerifierContext(graph=graph, replay=replay, contracts=contracts)
    )
    assert why == "ok" and v is not None
    assert [c.kind for c in v.checks] == ["return_contains"] and v.checks[0].value == "ORD-1"


def test_suspect_check_does_not_block_acceptance(graph, contracts):
    bad = graph.model_copy(deep=True)
    bad.nodes[1].checks[0].value = "shipped-X"
    replay = make_replay(bad)
    assert not accept_reference(bad, replay, "n2", contracts)[0]
    assert accept_reference(bad, replay, "n2", contracts, suspect={"n2.c1"})[0]
    v, why = generate_verifier(
        "n2", VerifierContext(graph=bad, replay=replay, contracts=contracts, suspect={"n2.c1"})
    )
    assert why == "ok" and all(getattr(c, "value", None) != "shipped-X" for c in v.checks)


def test_broken_reference_is_not_accepted(graph, contracts):
    replay = make_replay(graph, update_error="internal_error: boom")
    v, why = generate_verifier(
        "n2", VerifierContext(graph=graph, replay=replay, contracts=contracts)
    )
    assert v is None and "not accepted" in why


def test_model_checks_are_tested_and_revised(graph, contracts):
    # The model writes one check that rejects the reference and misses the effect: the test node
    # catches both, the revision drops it and adds the checks that pin the effect.
    replay = make_replay(graph)
    wrong = {
        "checks": [
            {
                "kind": "field_equals",
                "table": "order",
                "where": {"order_id": "ORD-1"},
                "field": "status",
                "value": "cancelled",
            }
        ]
    }
    llm = ScriptedChatModel([wrong])
    v, why = generate_verifier(
        "n2", VerifierContext(graph=graph, replay=replay, contracts=contracts, llm=llm)
    )
    assert why == "ok" and v is not None and v.strategy.startswith("llm")
    assert any("dropped" in f for f in v.feedback)
    assert all(getattr(c, "value", None) != "cancelled" for c in v.checks)


def test_store_keeps_every_version(tmp_path, graph, contracts):
    replay = make_replay(graph)
    store = VerifierStore(tmp_path)
    v, _ = generate_verifier("n2", VerifierContext(graph=graph, replay=replay, contracts=contracts))
    a = store.save(v)
    b = store.save(v)
    assert (a.version, b.version) == (1, 2) and store.latest(graph.id, "n2").version == 2


def test_another_call_sequence_with_the_same_effect_passes(graph, contracts):
    # A rollout that reached the same state through other calls (here: no ledger of the
    # reference's calls at all) still passes the generated write checks.
    replay = make_replay(graph)
    v, _ = generate_verifier("n2", VerifierContext(graph=graph, replay=replay, contracts=contracts))
    evidence = node_evidence(graph, replay, "n2")
    other = {m: e.model_copy(update={"ledger": []}) for m, e in evidence.items()}
    assert evaluate(v.checks, other).passed
