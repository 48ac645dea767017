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


async def test_routes_found_failing_by_revalidation_are_revised_once(
    tmp_path: Path, graph, contracts, monkeypatch
):
    """The bundle's revalidation after one route's revision names another route failing (a
    defect off the reference path): it is attributed to the environment with that evidence
    and revised in the same round, once per bundle."""
    import weft_evolve.rounds as rounds_mod
    from weft_evolve.models import Revision

    calls: list[list[str]] = []

    def fake_revise(bundle, tools, **kw):
        calls.append(list(tools))
        rev = Revision(component=Component.ENVIRONMENT, target_key="env:shop", fix=Fix.REVISE_ROUTE)
        # every revision's revalidation still sees some other route failing
        rev.failing_elsewhere = ["cancel_order"] if tools == ["update_order"] else ["get_order"]
        return rev, None

    monkeypatch.setattr(rounds_mod, "revise_environment", fake_revise)
    world = EvolveWorld(
        client=None, bundles={"shop": tmp_path / "shop"}, harnesses={}, views=[], out=tmp_path
    )
    atts = [
        _att(
            graph,
            "n2",
            Component.ENVIRONMENT,
            Target(mcp="shop", tool="update_order", fix=Fix.REVISE_ROUTE),
        )
    ]
    revs, _ = await apply_revisions(
        atts,
        {graph.id: graph},
        {graph.id: make_replay(graph)},
        contracts,
        world,
        probe=None,  # type: ignore[arg-type]
    )
    assert calls == [["update_order"], ["cancel_order"]]  # chased once, not again for get_order
    found = [a for a in atts if a.rule == "revalidation_found_failing"]
    assert [(a.unit_id, a.component, a.target.tool) for a in found] == [
        ("ops:shop:cancel_order", Component.ENVIRONMENT, "cancel_order")
    ]
    assert found[0].evidence[0].source == "construction_checks"
    assert len(revs) == 2
