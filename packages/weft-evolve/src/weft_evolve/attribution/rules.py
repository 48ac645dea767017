"""Rules decide first (§3.2.2): each node of a task version gets one diagnosis from its reference
replay, and each failure unit is decided from that diagnosis, the unit's own ledger and the
patterns across views and harnesses. What the rules cannot decide is left open for the agent.

Diagnosis of a node, in order:
1. the replay could not run -> open;
2. a reference call needs an input nothing supplies -> task (input neither given nor retrievable);
3. a reference call breaks its tool contract -> environment (that tool); a declared error the
   state explains -> task (initial state or binding);
4. the reference executes and conforms, the current checks pass, and they pin every effect the
   reference made from the node's inputs -> valid; an effect no check pins -> verifier (too lax);
5. the reference executes and conforms, makes the change the node names, and the checks still
   fail -> verifier (rejects an accepted execution); no such change -> open.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from weft_core.checks import values_equal
from weft_core.models import ContractSet, ErrorKind, TaskGraph, TaskNode
from weft_core.models._base import WeftModel
from weft_core.state import diff_db
from weft_evolve.attribution.conformance import contract_of, judge_call, later_writes_of
from weft_evolve.models import (
    Attribution,
    Component,
    CrossViewPattern,
    EvidenceItem,
    FailureUnit,
    Fix,
    NodeReplay,
    ReferenceReplay,
    Target,
    ToolStats,
)


class NodeDiagnosis(WeftModel):
    """What the reference replay says about one node of one task version."""

    task_id: str
    node_id: str
    component: Component | None = None  # None: valid, or open when `open` is set
    target: Target = Field(default_factory=Target)
    rule: str = ""
    evidence: list[EvidenceItem] = Field(default_factory=list)
    open: bool = False

    @property
    def valid(self) -> bool:
        return self.component is None and not self.open


def _fixture_has(node: TaskNode, table: str, field: str, value: Any) -> bool:
    return any(values_equal(r.get(field), value) for r in node.task.seed_rows.get(table, []))


def _effects(nr: NodeReplay, contracts: dict[str, ContractSet]) -> list[tuple[str, str, Any]]:
    """(table, field, value) the node's reference wrote from its value arguments or through a
    declared transition: the effects the intent names (keys and references locate rows)."""
    if nr.before is None or nr.after is None:
        return []
    wanted: list[tuple[str, str, Any]] = []
    for c in nr.calls:
        contract = contract_of(contracts, c.mcp, c.tool)
        if (
            c.is_error
            or contract is None
            or contract.operation not in ("create", "update", "action")
        ):
            continue
        for m in contract.mappings:
            if (
                m.role == "value"
                and m.entity
                and m.field
                and c.arguments.get(m.argument) is not None
            ):
                wanted.append((m.entity, m.field, c.arguments[m.argument]))
        # The state transition the tool declares (e.g. order.status -> shipped) is named by
        # the intent as much as the values it is given.
        for t in contract.transitions:
            if t.to_value is not None:
                wanted.append((t.entity, t.field, t.to_value))
    diff = diff_db(nr.before, nr.after)
    out: list[tuple[str, str, Any]] = []
    for table, field, value in wanted:
        td = diff.tables.get(table)
        if td is None:
            continue
        changed = [u.changed[field].new for u in td.updates.values() if field in u.changed]
        changed += [r.get(field) for r in td.inserts.values()]
        if any(values_equal(v, value) for v in changed):
            out.append((table, field, value))
    return out


def coverage_gaps(node: TaskNode, nr: NodeReplay, contracts: dict[str, ContractSet]) -> list[str]:
    """Effects of the accepted reference that no current check pins (a verifier too lax)."""
    if not node.checks:
        return ["the node has no completion check at all"]
    gaps: list[str] = []
    for table, field, value in _effects(nr, contracts):
        pinned = False
        for c in node.checks:
            kind = c.kind
            if kind == "field_equals" and c.table == table and c.field == field:  # type: ignore[union-attr]
                pinned = True
            elif kind in ("row_exists", "diff_contains") and c.table == table:  # type: ignore[union-attr]
                where = getattr(c, "where", {}) or {}
                if field in where:
                    pinned = True
        if not pinned:
            gaps.append(
                f"{table}.{field} := {value!r} is written by the reference but no check pins it"
            )
    return gaps


def _intent_effect(nr: NodeReplay) -> bool:
    """The reference did something observable: a state change, or a non-empty successful read."""
    if nr.before is not None and nr.after is not None and not diff_db(nr.before, nr.after).empty:
        return True
    if nr.workspace_after is not None and nr.workspace_after.files:
        return True
    return any(not c.is_error and c.value not in (None, {}, [], "") for c in nr.calls)


def diagnose_node(
    graph: TaskGraph,
    replay: ReferenceReplay,
    node_id: str,
    contracts: dict[str, ContractSet],
    stats: dict[tuple[str, str], ToolStats] | None = None,
) -> NodeDiagnosis:
    node = graph.node(node_id)
    d = NodeDiagnosis(task_id=graph.id, node_id=node_id)
    nr = replay.nodes.get(node_id)
    if replay.error or nr is None:
        d.open, d.rule = True, "replay_failed"
        d.evidence.append(
            EvidenceItem(source="reference_replay", detail=replay.error or "no replay")
        )
        return d
    if nr.template_error:
        inp = nr.template_error
        d.component, d.rule = Component.TASK, "input_not_supplied"
        d.target = Target(node_id=node_id, input_name=inp, fix=Fix.REBIND)
        d.evidence.append(
            EvidenceItem(
                source="task_graph",
                detail=f"reference call needs {inp!r}, which is neither given, bound by an "
                "upstream node nor an entity binding",
                data={"input": inp, "inputs": [i.name for i in node.inputs if i.value is not None]},
            )
        )
        return d
    for i, call in enumerate(nr.calls):
        contract = contract_of(contracts, call.mcp, call.tool)
        j = judge_call(
            call,
            contract,
            nr.before,
            nr.after,
            later_writes=later_writes_of(nr.calls, i, contracts),
        )
        if j.verdict == "environment":
            d.component, d.rule = Component.ENVIRONMENT, j.rule
            d.target = Target(mcp=call.mcp, tool=call.tool, node_id=node_id, fix=Fix.REVISE_ROUTE)
            d.evidence.append(EvidenceItem(source="reference_replay", detail=j.detail, data=j.data))
            st = (stats or {}).get((call.mcp, call.tool))
            if st is not None and st.calls:
                d.evidence.append(
                    EvidenceItem(
                        source="megamcp_stats",
                        detail=f"{call.mcp}.{call.tool}: {st.errors}/{st.calls} calls failed, "
                        f"{st.crashes} crashes this round",
                        data=st.model_dump(),
                    )
                )
            return d
        if j.verdict == "task":
            d.component, d.rule = Component.TASK, j.rule
            fix = Fix.REGROUND
            if j.rule == "no_matching_state":
                value, table, field = j.data["value"], j.data["entity"], j.data["field"]
                fix = (
                    Fix.REGROUND
                    if _fixture_has(node, table, field, value) or not j.data.get("alone")
                    else Fix.REBIND
                )
                d.target = Target(node_id=node_id, input_name=j.data.get("argument"), fix=fix)
            elif j.rule == "key_absent_from_state":
                value, table, field = j.data.get("value"), j.data["entity"], j.data["field"]
                fix = Fix.REGROUND if _fixture_has(node, table, field, value) else Fix.REBIND
                arg = next((k for k, v in call.arguments.items() if values_equal(v, value)), None)
                d.target = Target(node_id=node_id, input_name=arg, fix=fix)
            elif j.rule == "reference_arguments_rejected":
                d.target = Target(node_id=node_id, fix=Fix.REBIND)
            else:
                d.target = Target(node_id=node_id, fix=fix)
            d.evidence.append(EvidenceItem(source="initial_db", detail=j.detail, data=j.data))
            return d
    outcome = nr.outcome
    if outcome is not None and outcome.passed:
        gaps = coverage_gaps(node, nr, contracts)
        if gaps:
            d.component, d.rule = Component.VERIFIER, "effect_not_checked"
            d.target = Target(node_id=node_id, fix=Fix.REGENERATE_VERIFIER)
            d.evidence.append(
                EvidenceItem(
                    source="verifier_generation", detail="; ".join(gaps), data={"gaps": gaps}
                )
            )
        return d
    failing = [o for o in (outcome.failures if outcome else [])]
    if _intent_effect(nr):
        d.component, d.rule = Component.VERIFIER, "checks_reject_accepted_reference"
        d.target = Target(
            node_id=node_id, check_ids=[o.check_id for o in failing], fix=Fix.REGENERATE_VERIFIER
        )
        d.evidence.append(
            EvidenceItem(
                source="reference_replay",
                detail="the reference executes, conforms to every tool contract and makes the "
                "node's change, yet fails: "
                + "; ".join(f"{o.check_id}: {o.reason}" for o in failing),
                data={"failed": [o.model_dump() for o in failing]},
            )
        )
        return d
    d.open, d.rule = True, "reference_has_no_effect"
    d.evidence.append(
        EvidenceItem(
            source="reference_replay",
            detail="the reference executes without error but changes and returns nothing, and "
            "the checks fail: " + "; ".join(f"{o.check_id}: {o.reason}" for o in failing),
        )
    )
    return d


def _policy_evidence(unit: FailureUnit, node: TaskNode) -> list[EvidenceItem]:
    items: list[EvidenceItem] = []
    kinds: dict[str, int] = {}
    for e in unit.ledger:
        if e.is_error:
            k = e.error_kind.value if e.error_kind else "tool_error"
            kinds[k] = kinds.get(k, 0) + 1
    if kinds:
        items.append(
            EvidenceItem(source="ledger", detail=f"the policy's calls failed: {kinds}", data=kinds)
        )
    made = [(e.tool, e.arguments) for e in unit.ledger if not e.is_error]
    for ref in node.task.reference_calls:
        if not any(tool == ref.tool for tool, _ in made):
            items.append(
                EvidenceItem(
                    source="ledger", detail=f"no successful call of {ref.tool} in the turn"
                )
            )
    if unit.failed_checks:
        items.append(
            EvidenceItem(
                source="checkpoint",
                detail="; ".join(f"{o.check_id}: {o.reason}" for o in unit.failed_checks)[:500],
            )
        )
    return items


def decide_unit(
    unit: FailureUnit,
    graph: TaskGraph,
    diagnosis: NodeDiagnosis,
    pattern: CrossViewPattern | None,
) -> Attribution | None:
    """The rules' decision for one unit, or None when the rules leave it open."""
    base: dict[str, Any] = {
        "unit_id": unit.unit_id,
        "task_id": unit.task_id,
        "node_id": unit.node_id,
        "trace_id": unit.trace_id,
        "view": unit.view,
        "harness": unit.harness,
        "unit_kind": unit.kind,
    }
    infra = [
        e
        for e in unit.ledger
        if e.error_kind is not None and ErrorKind(e.error_kind).is_infrastructure
    ]
    if infra:
        return Attribution(
            **base,
            component=Component.INFRASTRUCTURE,
            rule="infrastructure_in_ledger",
            evidence=[
                EvidenceItem(source="ledger", detail=f"{len(infra)} infrastructure error(s)")
            ],
        )
    if diagnosis.open:
        return None
    pattern_item = (
        [
            EvidenceItem(
                source="cross_view",
                detail=f"node failed in {pattern.failed}/{pattern.rollouts} rollouts "
                f"(failed in {pattern.views_failed}, passed in {pattern.views_passed})",
                data=pattern.model_dump(),
            )
        ]
        if pattern is not None
        else []
    )
    if (
        diagnosis.rule == "effect_not_checked"
        and unit.kind == "failed_checkpoint"
        and diagnosis.component is Component.VERIFIER
    ):
        # A lax verifier still failed this turn: the checks it has caught a real mistake.
        return Attribution(
            **base,
            component=Component.POLICY,
            rule="existing_checks_caught_mistake",
            evidence=[
                EvidenceItem(
                    source="reference_replay",
                    detail="the reference passes every current check; the failed checks caught "
                    "the turn's own mistake",
                ),
                *_policy_evidence(unit, graph.node(unit.node_id)),
                *pattern_item,
            ],
        )
    if diagnosis.component is not None:
        if unit.kind == "rubric_disagreement" and diagnosis.component is not Component.VERIFIER:
            return None  # a passed checkpoint on a broken node: let the agent weigh it
        return Attribution(
            **base,
            component=diagnosis.component,
            target=diagnosis.target,
            rule=diagnosis.rule,
            evidence=[*diagnosis.evidence, *pattern_item],
        )
    # The node is valid for its reference.
    node = graph.node(unit.node_id)
    if unit.kind == "rubric_disagreement":
        return None
    if (
        pattern is not None
        and pattern.fails_everywhere
        and pattern.rollouts >= 4
        and len(pattern.views_failed) >= 2
    ):
        return None  # every view and harness fails a task its reference solves: look closer
    return Attribution(
        **base,
        component=Component.POLICY,
        rule="reference_passes",
        evidence=[
            EvidenceItem(
                source="reference_replay",
                detail="the reference solution passes this checkpoint on a fresh clone",
            ),
            *_policy_evidence(unit, node),
            *pattern_item,
        ],
    )
