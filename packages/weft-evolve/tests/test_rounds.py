"""Revision routing: policy failures leave everything unchanged; a verifier attribution changes
only its node's checks (a new task version), with a versioned verifier saved."""

from pathlib import Path

from weft_evolve.models import Attribution, Component, Fix, Target
from weft_evolve.rounds import EvolveWorld, apply_revisions

from .conftest import make_replay


def _att(graph, node_id, component, target=None) -> Attribution:
    return Attribution(
        unit_id=f"u:{node_id}",
        task_id=graph.id,
        node_id=node_id,
        trace_id="r",
        view="v",
        harness="h",
        component=component,
        rule="test",
        target=target or Target(),
    )


async def test_policy_failures_change_nothing(tmp_path: Path, graph, contracts):
    world = EvolveWorld(client=None, bundles={}, harnesses={}, views=[], out=tmp_path)
    revs, graphs = await apply_revisions(
        [_att(graph, "n1", Component.POLICY), _att(graph, "n2", Component.POLICY)],
        {graph.id: graph},
        {graph.id: make_replay(graph)},
        contracts,
        world,
        probe=None,  # type: ignore[arg-type]
    )
    assert revs == [] and graphs[graph.id] is graph


async def test_verifier_attribution_revises_only_that_node(tmp_path: Path, graph, contracts):
    bad = graph.model_copy(deep=True)
    bad.nodes[1].checks[0].value = "shipped-X"
    bad = bad.sealed()
    world = EvolveWorld(client=None, bundles={}, harnesses={}, views=[], out=tmp_path)
    target = Target(node_id="n2", check_ids=["n2.c1"], fix=Fix.REGENERATE_VERIFIER)
    revs, graphs = await apply_revisions(
        [_att(bad, "n2", Component.VERIFIER, target)],
        {bad.id: bad},
        {bad.id: make_replay(bad)},
        contracts,
        world,
        probe=None,  # type: ignore[arg-type]
    )
    [rev] = revs
    new = graphs[bad.id]
    assert rev.revalidated and new.version == bad.version + 1
    assert new.node("n1") == bad.node("n1")
    assert all(getattr(c, "value", None) != "shipped-X" for c in new.node("n2").checks)
    assert (tmp_path / "verifiers" / bad.id / "n2" / "v1.json").exists()
