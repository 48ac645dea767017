"""Testing a generated verifier on reference evidence and on perturbed evidence (§3.2.1).

The checks must pass on the accepted reference's evidence and must fail when the effect is
missing: the node's state change undone (and its calls gone from the ledger), or any one pinned
field put back to its old value.
"""

from __future__ import annotations

from weft_core.checks import Evidence, evaluate
from weft_core.models import Check, LedgerEntry, TaskGraph
from weft_core.state import DBState, WorkspaceState, diff_db
from weft_evolve.evidence.replay import node_evidence
from weft_evolve.models import NodeReplay, ReferenceReplay
from weft_evolve.verifier.models import VerifierTest


def _node_calls(nr: NodeReplay, ledger: list[LedgerEntry]) -> set[int]:
    seqs: set[int] = set()
    for c in nr.calls:
        for e in reversed(ledger):
            if e.seq not in seqs and e.tool == c.tool and e.arguments == c.arguments:
                seqs.add(e.seq)
                break
    return seqs


def perturbations(
    graph: TaskGraph, replay: ReferenceReplay, node_id: str
) -> list[tuple[str, dict[str, Evidence]]]:
    nr = replay.nodes[node_id]
    base = node_evidence(graph, replay, node_id)
    ev = base[nr.mcp]
    mine = _node_calls(nr, ev.ledger)
    out: list[tuple[str, dict[str, Evidence]]] = []
    ws = ev.workspace_after
    written = {
        str(v).lstrip("/")
        for c in nr.calls
        for k, v in c.arguments.items()
        if k in ("path", "destination", "folder")
    }
    ws_without = (
        WorkspaceState(files={p: f for p, f in ws.files.items() if p not in written})
        if ws
        else None
    )
    missing = ev.model_copy(
        update={
            "final": nr.before if nr.before is not None else ev.final,
            "diff": None,
            "ledger": [e for e in ev.ledger if e.seq not in mine],
            "workspace_after": ws_without,
        }
    )
    out.append(("effect_missing", {**base, nr.mcp: Evidence.model_validate(missing.model_dump())}))
    if nr.before is not None and nr.after is not None:
        diff = diff_db(nr.before, nr.after)
        for table, td in sorted(diff.tables.items()):
            for key, upd in td.updates.items():
                for f, ch in upd.changed.items():
                    tables = {t: dict(rows) for t, rows in nr.after.tables.items()}
                    tables[table] = dict(tables[table])
                    tables[table][key] = {**tables[table][key], f: ch.old}
                    reverted = DBState(tables=tables, schemas=nr.after.schemas)
                    pert = ev.model_copy(update={"final": reverted, "diff": None})
                    out.append(
                        (
                            f"revert {table}.{f}",
                            {**base, nr.mcp: Evidence.model_validate(pert.model_dump())},
                        )
                    )
    return out


def test_checks(
    graph: TaskGraph, replay: ReferenceReplay, node_id: str, checks: list[Check]
) -> tuple[list[VerifierTest], list[str], list[str]]:
    """(tests, ids of checks failing on the reference, perturbations the set lets through)."""
    bindings = graph.verifier().bindings
    tests: list[VerifierTest] = []
    ref = evaluate(checks, node_evidence(graph, replay, node_id), bindings=bindings)
    failing = [o.check_id for o in ref.failures]
    tests.append(
        VerifierTest(
            name="reference",
            expect_pass=True,
            passed=ref.passed,
            detail="; ".join(f"{o.check_id}: {o.reason}" for o in ref.failures)[:500],
        )
    )
    escaped: list[str] = []
    for name, evidence in perturbations(graph, replay, node_id):
        res = evaluate(checks, evidence, bindings=bindings)
        tests.append(VerifierTest(name=name, expect_pass=False, passed=res.passed))
        if res.passed:
            escaped.append(name)
    return tests, failing, escaped
