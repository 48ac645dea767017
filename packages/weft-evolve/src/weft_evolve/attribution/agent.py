"""The attribution agent (§3.2.2) as a LangGraph state machine.

    rules --(open units)--> judge --> audit --> END
      \\--(none open)-----------------------------> END

`rules` decides every unit the evidence settles (attribution.rules). Only the units left open reach
`judge`: with a model, each gets an evidence packet and the model's verdict; without one, the
programmatic strategy reasons over the same packet. `audit` holds every verdict against the hard
evidence (a model saying "environment" for a tool that conforms to its contract is overruled, with
the reason kept in `Attribution.overridden`). Policy failures never lead to a revision.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from weft_core.llm import reply_payload
from weft_core.models import TaskGraph
from weft_evolve.attribution.rules import NodeDiagnosis, decide_unit
from weft_evolve.models import (
    Attribution,
    Component,
    CrossViewPattern,
    EvidenceItem,
    FailureUnit,
    Fix,
    ReferenceReplay,
    Target,
)


class LLMVerdict(BaseModel):
    """What the model must answer for one open unit."""

    component: Literal["policy", "environment", "task", "verifier", "infrastructure"]
    fix: Literal[
        "none", "revise_route", "rebind", "reground", "drop_node", "regenerate_verifier"
    ] = "none"
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    evidence_refs: list[int] = Field(default_factory=list, description="Indices of packet facts.")
    reason: str = ""


@dataclass
class AttributionContext:
    """Dependencies of the graph (LangGraph context_schema)."""

    graphs: dict[str, TaskGraph]
    diagnoses: dict[tuple[str, str], NodeDiagnosis]
    patterns: dict[tuple[str, str], CrossViewPattern] = field(default_factory=dict)
    replays: dict[str, ReferenceReplay] = field(default_factory=dict)
    llm: Any = None


class AttributionState(TypedDict, total=False):
    units: list[FailureUnit]
    decided: Annotated[list[Attribution], operator.add]
    open: list[FailureUnit]
    proposals: list[tuple[FailureUnit, Attribution, Attribution | None]]


SYSTEM = (
    "You attribute one failed (or rubric-rejected) checkpoint of an agent rollout to exactly one "
    "component: policy (the agent erred on a valid task), environment (a tool backend misbehaves "
    "against its contract), task (the task graph or its initial state cannot be solved as "
    "specified), verifier (the checks reject a correct execution or accept an incomplete one), or "
    "infrastructure. Decide only from the numbered facts of the evidence packet. Answer with JSON: "
    '{"component": ..., "fix": ..., "confidence": 0..1, "evidence_refs": [fact numbers], "reason": ...}.'
)


def evidence_packet(unit: FailureUnit, ctx: AttributionContext) -> dict[str, Any]:
    """Everything the agent may read about one unit, as numbered facts."""
    graph = ctx.graphs[unit.task_id]
    node = graph.node(unit.node_id)
    diag = ctx.diagnoses.get((unit.task_id, unit.node_id))
    pattern = ctx.patterns.get((unit.task_id, unit.node_id))
    replay = ctx.replays.get(unit.task_id)
    nr = replay.nodes.get(unit.node_id) if replay else None
    facts: list[str] = []
    if diag is not None:
        facts += [f"[{e.source}] {e.detail}" for e in diag.evidence]
    if nr is not None:
        for c in nr.calls:
            facts.append(
                f"[reference_replay] {c.tool}({json.dumps(c.arguments, default=str)[:200]}) -> "
                + (
                    f"ERROR {c.text[:160]}"
                    if c.is_error
                    else f"ok {json.dumps(c.value, default=str)[:200]}"
                )
            )
        if nr.outcome is not None:
            facts += [
                f"[reference_replay] check {o.check_id} {'passed' if o.passed else 'FAILED'}: {o.reason[:160]}"
                for o in nr.outcome.outcomes
            ]
    for e in unit.ledger:
        facts.append(
            f"[ledger] {e.tool}({json.dumps(e.arguments, default=str)[:160]}) -> "
            + (f"{e.error_kind} {str(e.result)[:120]}" if e.is_error else "ok")
        )
    facts += [f"[checkpoint] {o.check_id} FAILED: {o.reason[:160]}" for o in unit.failed_checks]
    facts += [f"[rubric] unmet: {r}" for r in unit.rubric_failures]
    if pattern is not None:
        facts.append(
            f"[cross_view] failed {pattern.failed}/{pattern.rollouts}; failed in "
            f"{pattern.views_failed}; passed in {pattern.views_passed}"
        )
    return {
        "unit": unit.unit_id,
        "kind": unit.kind,
        "node": {"id": node.id, "intent": node.intent, "tools": node.task.tool_chain},
        "view": unit.view,
        "harness": unit.harness,
        "facts": facts,
    }


def _base(unit: FailureUnit) -> dict[str, Any]:
    return {
        "unit_id": unit.unit_id,
        "task_id": unit.task_id,
        "node_id": unit.node_id,
        "trace_id": unit.trace_id,
        "view": unit.view,
        "harness": unit.harness,
        "unit_kind": unit.kind,
    }


def _target_for(
    component: Component, unit: FailureUnit, diag: NodeDiagnosis | None, fix: Fix | None
) -> Target:
    if diag is not None and diag.component == component:
        return diag.target
    if component is Component.VERIFIER:
        return Target(node_id=unit.node_id, fix=Fix.REGENERATE_VERIFIER)
    if component is Component.TASK:
        return Target(
            node_id=unit.node_id,
            fix=fix if fix in (Fix.REBIND, Fix.REGROUND, Fix.DROP_NODE) else Fix.REGROUND,
        )
    if component is Component.ENVIRONMENT:
        bad = next((e for e in unit.ledger if e.is_error), None)
        return Target(
            mcp=bad.mcp if bad else None,
            tool=bad.tool if bad else None,
            node_id=unit.node_id,
            fix=Fix.REVISE_ROUTE,
        )
    return Target()


def programmatic_verdict(unit: FailureUnit, ctx: AttributionContext) -> Attribution:
    """Reason over the packet for what the rules left open."""
    graph = ctx.graphs[unit.task_id]
    node = graph.node(unit.node_id)
    diag = ctx.diagnoses.get((unit.task_id, unit.node_id))
    replay = ctx.replays.get(unit.task_id)
    nr = replay.nodes.get(unit.node_id) if replay else None
    ev: list[EvidenceItem] = list(diag.evidence) if diag else []
    if diag is not None and diag.rule == "replay_failed":
        return Attribution(
            **_base(unit),
            component=Component.INFRASTRUCTURE,
            decided_by="programmatic",
            rule="replay_unavailable",
            evidence=ev,
            confidence=0.5,
        )
    if unit.kind == "rubric_disagreement":
        if diag is not None and diag.component is not None:
            comp = diag.component
            return Attribution(
                **_base(unit),
                component=comp,
                target=diag.target,
                decided_by="programmatic",
                rule="broken_node_passed_by_checks",
                evidence=ev,
                confidence=0.6,
            )
        return Attribution(
            **_base(unit),
            component=Component.POLICY,
            decided_by="programmatic",
            rule="checks_pin_every_reference_effect",
            evidence=[
                *ev,
                EvidenceItem(
                    source="rubric",
                    detail="the rubric judge read only the transcript; the executable checks pin "
                    "every effect of the accepted reference, so they stand: "
                    + "; ".join(unit.rubric_failures)[:300],
                ),
            ],
            confidence=0.6,
        )
    if diag is not None and diag.rule == "reference_has_no_effect":
        inputs = [i.value for i in node.inputs if i.value is not None]
        wrong = [
            o
            for o in (nr.outcome.failures if nr and nr.outcome else [])
            if not any(str(v) in o.reason for v in inputs)
        ]
        comp = Component.VERIFIER if wrong else Component.TASK
        return Attribution(
            **_base(unit),
            component=comp,
            target=_target_for(comp, unit, diag, Fix.REGROUND),
            decided_by="programmatic",
            rule="failing_checks_name_no_input" if wrong else "state_prevents_effect",
            evidence=ev,
            confidence=0.5,
        )
    # A valid node failing in every view and harness: compare the turn with the reference.
    ref = [(c.tool, c.arguments) for c in (nr.calls if nr else [])]
    made = [(e.tool, e.arguments) for e in unit.ledger if not e.is_error]
    errors = [e for e in unit.ledger if e.is_error]
    same = bool(ref) and all(any(t == rt and a == ra for t, a in made) for rt, ra in ref)
    if same and not errors:
        return Attribution(
            **_base(unit),
            component=Component.VERIFIER,
            target=Target(node_id=unit.node_id, fix=Fix.REGENERATE_VERIFIER),
            decided_by="programmatic",
            rule="same_calls_as_reference_fail",
            evidence=[
                *ev,
                EvidenceItem(source="ledger", detail="the turn made exactly the reference calls"),
            ],
            confidence=0.6,
        )
    return Attribution(
        **_base(unit),
        component=Component.POLICY,
        decided_by="programmatic",
        rule="turn_deviates_from_reference",
        evidence=[
            *ev,
            EvidenceItem(
                source="ledger",
                detail=f"{len(errors)} failed call(s); calls differ from the reference's",
            ),
        ],
        confidence=0.6,
    )


def llm_verdict(
    unit: FailureUnit, ctx: AttributionContext
) -> tuple[Attribution | None, str | None]:
    packet = evidence_packet(unit, ctx)
    try:
        reply = ctx.llm.invoke([("system", SYSTEM), ("human", json.dumps(packet, default=str))])
        verdict = LLMVerdict.model_validate(reply_payload(reply))
    except Exception as exc:  # an unusable answer: the programmatic verdict stands
        return None, f"model answer unusable: {type(exc).__name__}: {str(exc)[:200]}"
    comp = Component(verdict.component)
    diag = ctx.diagnoses.get((unit.task_id, unit.node_id))
    facts = packet["facts"]
    refs = [facts[i] for i in verdict.evidence_refs if 0 <= i < len(facts)]
    return (
        Attribution(
            **_base(unit),
            component=comp,
            target=_target_for(comp, unit, diag, Fix(verdict.fix)),
            decided_by="llm",
            rule="llm_judgement",
            confidence=verdict.confidence,
            evidence=[
                *(EvidenceItem(source="llm", detail=r) for r in refs),
                EvidenceItem(source="llm", detail=verdict.reason[:500] or "no reason given"),
            ],
        ),
        None,
    )


def contradiction(att: Attribution, unit: FailureUnit, ctx: AttributionContext) -> str | None:
    """Why the hard evidence rules a verdict out, or None when it is consistent."""
    diag = ctx.diagnoses.get((unit.task_id, unit.node_id))
    replay = ctx.replays.get(unit.task_id)
    nr = replay.nodes.get(unit.node_id) if replay else None
    executed = nr is not None and nr.executed
    passes = nr is not None and nr.outcome is not None and nr.outcome.passed
    comp = att.component
    if comp is Component.ENVIRONMENT:
        undeclared = [e for e in unit.ledger if e.is_error and "internal_error" in str(e.result)]
        if not (diag and diag.component is Component.ENVIRONMENT) and not undeclared:
            return (
                "every reference call conforms to its tool contract and no call hit a backend fault"
            )
    if (
        comp is Component.TASK
        and executed
        and (diag is None or diag.component is not Component.TASK)
        and diag
        and diag.rule != "reference_has_no_effect"
    ):
        return (
            "the reference solution executes on the task's initial state with every input supplied"
        )
    if (
        comp is Component.VERIFIER
        and diag is not None
        and diag.component in (Component.ENVIRONMENT, Component.TASK)
    ):
        return f"the reference itself breaks ({diag.rule}); the checks are not what fails"
    if (
        comp is Component.VERIFIER
        and passes
        and diag is not None
        and diag.valid
        and unit.kind == "rubric_disagreement"
    ):
        return "the checks pass the accepted reference and pin every effect it makes"
    if (
        comp is Component.POLICY
        and nr is not None
        and not passes
        and unit.kind == "failed_checkpoint"
    ):
        return "the reference solution fails this checkpoint too, so the task cannot be valid as is"
    if (
        comp is Component.INFRASTRUCTURE
        and not (diag and diag.rule == "replay_failed")
        and not any(
            e.error_kind is not None and e.error_kind.is_infrastructure for e in unit.ledger
        )
    ):
        return "no infrastructure error in the ledger and the replay ran"
    return None


def rules_node(state: AttributionState, runtime: Runtime[AttributionContext]) -> dict[str, Any]:
    ctx = runtime.context
    decided: list[Attribution] = []
    open_units: list[FailureUnit] = []
    for unit in state.get("units", []):
        diag = ctx.diagnoses.get((unit.task_id, unit.node_id))
        if diag is None:
            open_units.append(unit)
            continue
        att = decide_unit(
            unit, ctx.graphs[unit.task_id], diag, ctx.patterns.get((unit.task_id, unit.node_id))
        )
        if att is None:
            open_units.append(unit)
        else:
            decided.append(att)
    return {"decided": decided, "open": open_units}


def judge_node(state: AttributionState, runtime: Runtime[AttributionContext]) -> dict[str, Any]:
    ctx = runtime.context
    proposals: list[tuple[FailureUnit, Attribution, Attribution | None]] = []
    for unit in state.get("open", []):
        fallback = programmatic_verdict(unit, ctx)
        model_att: Attribution | None = None
        if ctx.llm is not None:
            model_att, problem = llm_verdict(unit, ctx)
            if model_att is None and problem:
                fallback = fallback.model_copy(update={"overridden": problem})
        proposals.append((unit, fallback, model_att))
    return {"proposals": proposals}


def audit_node(state: AttributionState, runtime: Runtime[AttributionContext]) -> dict[str, Any]:
    ctx = runtime.context
    decided: list[Attribution] = []
    for unit, fallback, model_att in state.get("proposals", []):
        if model_att is None:
            decided.append(fallback)
            continue
        why = contradiction(model_att, unit, ctx)
        if why is None:
            decided.append(model_att)
        else:
            decided.append(
                fallback.model_copy(
                    update={"overridden": f"model said {model_att.component.value}: {why}"}
                )
            )
    return {"decided": decided}


def route_after_rules(state: AttributionState) -> str:
    return "judge" if state.get("open") else END


def build_attribution_graph(*, checkpointer: Any = None) -> Any:
    """The compiled attribution agent; run with `context=AttributionContext(...)`."""
    g: StateGraph[AttributionState, AttributionContext, AttributionState, AttributionState] = (
        StateGraph(AttributionState, context_schema=AttributionContext)
    )
    g.add_node("rules", rules_node)
    g.add_node("judge", judge_node)
    g.add_node("audit", audit_node)
    g.add_edge(START, "rules")
    g.add_conditional_edges("rules", route_after_rules, {"judge": "judge", END: END})
    g.add_edge("judge", "audit")
    g.add_edge("audit", END)
    return g.compile(checkpointer=checkpointer)


def attribute(units: list[FailureUnit], ctx: AttributionContext) -> list[Attribution]:
    """Run the agent on `units`; one attribution per unit."""
    graph = build_attribution_graph()
    out = graph.invoke({"units": units, "decided": []}, context=ctx)
    return list(out.get("decided", []))
