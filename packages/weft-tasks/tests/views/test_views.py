import pytest
from langchain_core.messages import AIMessage

from weft_core.models import Disclosure, EdgeKind, TaskEdge, TaskGraph, ViewMode
from weft_tasks.views import (
    LLMRequestWriter,
    SimUser,
    ViewError,
    build_view,
    disclosure_order,
    invariants_hash,
    render_brief,
    required_values,
    sample_persona,
)

ALL_VIEWS = [(m, d) for m in ViewMode for d in Disclosure]


@pytest.mark.parametrize(("mode", "disclosure"), ALL_VIEWS)
def test_views_keep_objectives_dependencies_state_and_checks_fixed(graph, mode, disclosure):
    before = invariants_hash(graph)
    copy = graph.model_copy(deep=True)
    view = build_view(graph, mode, disclosure, seed=3)
    assert view.mode is mode and view.disclosure is disclosure
    assert invariants_hash(graph) == before
    assert graph == copy  # the graph object itself is untouched


def test_every_view_has_the_same_invariants_across_modes_and_levels(graph):
    hashes = set()
    for mode, disclosure in ALL_VIEWS:
        build_view(graph, mode, disclosure)
        hashes.add(invariants_hash(graph))
    assert len(hashes) == 1


@pytest.mark.parametrize("disclosure", list(Disclosure))
def test_user_known_inputs_are_kept_in_both_views(graph, disclosure):
    agentic = build_view(graph, "agentic", disclosure)
    simuser = build_view(graph, "simuser", disclosure)
    for i, nid in enumerate(disclosure_order(graph)):
        node = graph.node(nid)
        for value in required_values(node, disclosure, graph.bindings):
            assert value in agentic.brief
            assert value in simuser.requests[i]
        assert node.intent.rstrip(".").split()[-1] in agentic.brief


def test_disclosure_levels_differ_in_explicitness(graph):
    full = render_brief(graph, Disclosure.FULL)
    vague = render_brief(graph, Disclosure.VAGUE)
    # The ticket step's customer name is an attribute of the customer already identified by
    # email: full states it, vague leaves it to the agent to look up.
    assert "Ada Lovelace" in full.split("Complete all")[1]
    assert "Ada Lovelace" not in vague.split("Complete all")[1]
    assert "ada@example.com" in vague
    assert "gold" in vague
    n3 = graph.node("n3")
    assert "Ada Lovelace" in required_values(n3, Disclosure.PARTIAL, graph.bindings)
    assert "Ada Lovelace" not in required_values(n3, Disclosure.VAGUE, graph.bindings)


async def test_simuser_discloses_one_request_per_turn_in_dependency_order(graph):
    # Scramble the stored order: disclosure must still follow the dependencies.
    scrambled = graph.model_copy(update={"order": ["n3", "n2", "n1"], "nodes": graph.nodes[::-1]})
    sim = SimUser(scrambled, Disclosure.PARTIAL, sample_persona(1))
    seen = []
    while (turn := await sim.next_request()) is not None:
        seen.append(turn.node_id)
        node = scrambled.node(turn.node_id)
        assert node.intent.rstrip(".").lower()[:20] in turn.request.lower()
        later = [scrambled.node(n).intent for n in sim.order[len(seen) :]]
        assert not any(intent.lower() in turn.request.lower() for intent in later)
    assert seen == ["n1", "n2", "n3"]
    assert await sim.next_request() is None


def test_personas_are_seeded():
    assert sample_persona(7) == sample_persona(7)
    assert len({sample_persona(s).id for s in range(40)}) > 1


def test_simuser_view_names_its_persona_and_has_one_request_per_node(graph):
    view = build_view(graph, "simuser", "full", seed=5)
    assert view.persona and view.persona.split(":")[0] == sample_persona(f"{graph.id}:5").id
    assert len(view.requests) == len(graph.nodes)
    assert view.brief is None


def test_cycles_and_unknown_nodes_are_clear_errors(graph):
    cyclic = graph.model_copy(
        update={"edges": [*graph.edges, TaskEdge(source="n3", target="n1", kind=EdgeKind.STATE)]}
    )
    with pytest.raises(ViewError, match="cycle"):
        disclosure_order(cyclic)
    bad = graph.model_copy(
        update={"edges": [TaskEdge(source="n1", target="nX", kind=EdgeKind.STATE)]}
    )
    with pytest.raises(ViewError, match="'nX'"):
        build_view(bad, "agentic")
    assert isinstance(cyclic, TaskGraph)


async def test_llm_simulator_accepts_a_valid_persona_request(graph, scripted):
    model = scripted(
        [
            AIMessage('{"request": "Morning! Could you pull up the account for ada@example.com?"}'),
        ]
    )
    sim = SimUser(graph, Disclosure.FULL, sample_persona(1), LLMRequestWriter(model))
    turn = await sim.next_request()
    assert turn.request == "Morning! Could you pull up the account for ada@example.com?"
    assert turn.strategy != "programmatic-fallback"


async def test_llm_simulator_catches_a_leak_of_future_requests_and_falls_back(graph, scripted):
    leaky = AIMessage(
        "Find ada@example.com, then upgrade that customer to the gold tier and open a "
        "high-priority support ticket about the tier upgrade."
    )
    model = scripted([leaky, leaky])
    writer = LLMRequestWriter(model)
    sim = SimUser(graph, Disclosure.FULL, sample_persona(1), writer)
    turn = await sim.next_request()
    assert turn.strategy == "programmatic-fallback"
    assert turn.request == sim.context(0).template
    problems = " ".join(writer.log[0].problems)
    assert "leaks a later request" in problems or "must not reveal" in problems


async def test_llm_simulator_catches_dropped_inputs_then_accepts_the_repair(graph, scripted):
    model = scripted(
        [
            AIMessage('{"request": "Can you look up a customer for me?"}'),
            AIMessage('{"request": "Can you look up the customer ada@example.com for me?"}'),
        ]
    )
    writer = LLMRequestWriter(model)
    sim = SimUser(graph, Disclosure.FULL, sample_persona(2), writer)
    turn = await sim.next_request()
    assert turn.request == "Can you look up the customer ada@example.com for me?"
    assert writer.log[0].rejected == ["Can you look up a customer for me?"]
    assert writer.log[0].strategy == "llm"


async def test_vague_llm_request_that_states_a_hidden_value_is_rejected(graph):
    # At vague level the ticket turn must not state the customer's name (retrievable).
    sim = SimUser(graph, Disclosure.VAGUE, sample_persona(2))
    for _ in range(2):
        await sim.next_request()
    ctx = sim.context(2)
    assert "Ada Lovelace" in ctx.forbidden
    from weft_tasks.views import validate_request

    text = (
        "Open a high-priority ticket for Ada Lovelace (ada@example.com), subject "
        "Gold tier upgrade, priority high"
    )
    assert any("Ada Lovelace" in p for p in validate_request(text, ctx))


async def test_vague_keeps_the_identifying_value_of_every_object_a_turn_touches(graph):
    sim = SimUser(graph, Disclosure.VAGUE, sample_persona(3))
    first = await sim.next_request()
    assert "ada@example.com" in first.request  # the lookup must still say whom to look up
    vague = render_brief(graph, Disclosure.VAGUE)
    assert "with email ada@example.com" in vague


def test_an_object_named_by_the_intent_makes_its_other_values_lookups(graph):
    # n3's intent names Ada by email: her name is then a lookup at vague level, and the
    # request's intent never states a value its level hides.
    n3 = graph.node("n3")
    named = n3.model_copy(update={"intent": "Open a ticket for ada@example.com about the upgrade"})
    g = graph.model_copy(update={"nodes": [*graph.nodes[:2], named]})
    assert required_values(named, Disclosure.VAGUE, g.bindings) == [
        "ada@example.com",
        "Gold tier upgrade",
        "high",
    ]
    assert "Ada Lovelace" not in render_brief(g, Disclosure.VAGUE).split("Complete all")[1]


def test_vague_hides_attributes_described_relative_to_a_named_identifier(graph):
    from weft_core.models import TaskInput

    n2 = graph.node("n2")
    odd = n2.model_copy(
        update={
            "intent": "Upgrade the customer ada@example.com to gold",
            "inputs": [
                TaskInput(
                    name="customer_id",
                    description="customer id of customer ada@example.com",
                    value=1,
                ),
                TaskInput(name="tier", description="new tier", value="gold"),
            ],
        }
    )
    assert required_values(odd, "vague", graph.bindings) == ["gold"]
    assert required_values(odd, "partial", graph.bindings) == ["1", "gold"]
    assert "customer id of customer ada@example.com: find it" in render_brief(
        graph.model_copy(update={"nodes": [graph.nodes[0], odd, graph.nodes[2]]}), "vague"
    )


def test_a_value_found_upstream_is_stated_only_in_full(graph):
    """An input an earlier step finds in the initial state: full gives it, partial and vague
    only point at the step (so partial differs from full on every such node)."""
    order = disclosure_order(graph)
    first, later = order[0], graph.node(order[-1])
    target = next(i for i in later.inputs if isinstance(i.value, str) and len(i.value) >= 3)
    value = "Found-in-step-one 42"
    inputs = [
        i.model_copy(
            update={"source": "upstream", "value": value, "from_node": first, "from_output": "x"}
        )
        if i.name == target.name
        else i
        for i in later.inputs
    ]
    nodes = [
        n.model_copy(update={"inputs": inputs}) if n.id == later.id else n for n in graph.nodes
    ]
    g = graph.model_copy(update={"nodes": nodes})
    full = build_view(g, ViewMode.SIMUSER, Disclosure.FULL).requests[-1]
    partial = build_view(g, ViewMode.SIMUSER, Disclosure.PARTIAL).requests[-1]
    vague = build_view(g, ViewMode.SIMUSER, Disclosure.VAGUE).requests[-1]
    assert value in full
    assert value not in partial and value not in vague
    assert "from" in partial and partial != full
