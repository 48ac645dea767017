"""Verifier revision (§3.2.2 -> §3.2.1): regenerate a node's checks and rubric from its accepted
reference, replacing only that node's checks (and its share of the final checks)."""

from __future__ import annotations

from weft_core.checks import evaluate
from weft_core.models import ContractSet, TaskGraph
from weft_evolve.evidence.replay import node_evidence
from weft_evolve.models import Component, Fix, ReferenceReplay, Revision
from weft_evolve.revision.task import _revised
from weft_evolve.verifier.agent import VerifierContext, generate_verifier
from weft_evolve.verifier.models import GeneratedVerifier
from weft_evolve.verifier.store import VerifierStore
from weft_tasks.views import disclosure_order


def revise_verifier(
    graph: TaskGraph,
    node_id: str,
    replay: ReferenceReplay,
    contracts: dict[str, ContractSet],
    store: VerifierStore,
    *,
    suspect: set[str] | None = None,
    llm: object = None,
) -> tuple[Revision, TaskGraph | None, GeneratedVerifier | None]:
    rev = Revision(
        component=Component.VERIFIER,
        target_key=f"verifier:{graph.id}:{node_id}",
        task_ids=[graph.id],
        fix=Fix.REGENERATE_VERIFIER,
        from_version=f"{graph.id}@v{graph.version}",
    )
    v, why = generate_verifier(
        node_id,
        VerifierContext(
            graph=graph, replay=replay, contracts=contracts, llm=llm, suspect=suspect or set()
        ),
    )
    if v is None or why != "ok":
        rev.error = why
        rev.revalidation = [
            f"{t.name}: {'ok' if t.ok else 'FAILED'}" for t in (v.tests if v else [])
        ]
        return rev, None, None
    saved = store.save(v)
    rev.revalidation = [f"{t.name}: {'ok' if t.ok else 'FAILED'}" for t in saved.tests]
    node = graph.node(node_id)
    old = {c.id for c in node.checks}
    nodes = [
        n.model_copy(update={"checks": saved.checks}) if n.id == node_id else n for n in graph.nodes
    ]
    # Final checks: the node's generated checks that still hold when the reference is done.
    last = disclosure_order(graph)[-1]
    end = node_evidence(graph, replay, last)
    held = evaluate(saved.checks, end, bindings=graph.verifier().bindings)
    keep_ids = {o.check_id for o in held.outcomes if o.passed}
    final = [c for c in graph.final_checks if c.id not in old] + [
        c for c in saved.checks if c.id in keep_ids
    ]
    new_graph = _revised(graph, nodes=nodes, final_checks=final)
    rev.changed = [
        f"{node_id} checks {sorted(old)} -> {[c.id for c in saved.checks]}",
        f"rubric: {len(saved.rubric)} item(s)",
    ]
    rev.to_version = f"{graph.id}@v{new_graph.version}"
    rev.revalidated = True
    return rev, new_graph, saved
