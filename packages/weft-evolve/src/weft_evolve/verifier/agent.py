"""The verifier-generating agent (§3.2.1) as a LangGraph state machine.

    accept --(accepted)--> generate --> test --(tests fail, budget left)--> revise --> test
       \\--(rejected)--> END                  \\--(tests pass or budget spent)--> END

`generate` writes checks from the accepted reference (a model when one is configured, its answer
parsed and validated; the programmatic strategy otherwise or when the model's checks are unusable).
`test` runs them on the reference evidence and on perturbed evidence; `revise` drops checks that
reject the reference and adds checks for effects a perturbation got past, and records why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from weft_core.checks import parse_checks
from weft_core.llm import reply_payload
from weft_core.models import Check, ContractSet, TaskGraph
from weft_evolve.models import ReferenceReplay
from weft_evolve.verifier.generate import accept_reference, build_verifier, programmatic_checks
from weft_evolve.verifier.models import GeneratedVerifier, VerifierTest
from weft_evolve.verifier.testing import test_checks


@dataclass
class VerifierContext:
    graph: TaskGraph
    replay: ReferenceReplay
    contracts: dict[str, ContractSet]
    llm: Any = None
    suspect: set[str] = field(default_factory=set)
    max_revisions: int = 2


class VerifierState(TypedDict, total=False):
    node_id: str
    accepted: bool
    reason: str
    checks: list[Check]
    strategy: str
    tests: list[VerifierTest]
    failing: list[str]
    escaped: list[str]
    revisions: int
    feedback: list[str]


PROMPT = (
    "Write deterministic completion checks for one atomic task from its accepted reference "
    "execution. Use only these kinds: row_exists, row_absent, field_equals, row_count, "
    "diff_contains, no_other_changes, return_contains, workspace_file. Never require a call "
    'sequence. Answer with JSON: {"checks": [ ... ]}.'
)


def accept_node(state: VerifierState, runtime: Runtime[VerifierContext]) -> dict[str, Any]:
    ctx = runtime.context
    ok, why = accept_reference(ctx.graph, ctx.replay, state["node_id"], ctx.contracts, ctx.suspect)
    return {"accepted": ok, "reason": why, "revisions": 0, "feedback": []}


def _llm_checks(ctx: VerifierContext, node_id: str) -> list[Check] | None:
    node = ctx.graph.node(node_id)
    nr = ctx.replay.nodes[node_id]
    packet = {
        "intent": node.intent,
        "mcp": nr.mcp,
        "completion_conditions": [
            c.model_dump(mode="json") for c in node.checks if c.id not in ctx.suspect
        ],
        "reference_calls": [
            {"tool": c.tool, "arguments": c.arguments, "returned": c.value} for c in nr.calls
        ],
    }
    try:
        reply = ctx.llm.invoke(
            [("system", PROMPT), ("human", json.dumps(packet, default=str)[:12000])]
        )
        payload = reply_payload(reply)
        raw = payload.get("checks") if isinstance(payload, dict) else payload
        checks = parse_checks(raw or [])
    except Exception:  # unusable answer: the programmatic strategy writes the checks
        return None
    return [
        c.model_copy(update={"id": f"{node_id}.g{i + 1}", "mcp": c.mcp or nr.mcp})
        for i, c in enumerate(checks)
    ] or None


def generate_node(state: VerifierState, runtime: Runtime[VerifierContext]) -> dict[str, Any]:
    ctx = runtime.context
    node_id = state["node_id"]
    if ctx.llm is not None:
        checks = _llm_checks(ctx, node_id)
        if checks is not None:
            return {"checks": checks, "strategy": "llm"}
    return {
        "checks": programmatic_checks(ctx.graph, ctx.replay, node_id, ctx.contracts),
        "strategy": "programmatic",
    }


def test_node(state: VerifierState, runtime: Runtime[VerifierContext]) -> dict[str, Any]:
    ctx = runtime.context
    tests, failing, escaped = test_checks(ctx.graph, ctx.replay, state["node_id"], state["checks"])
    return {"tests": tests, "failing": failing, "escaped": escaped}


def revise_node(state: VerifierState, runtime: Runtime[VerifierContext]) -> dict[str, Any]:
    ctx = runtime.context
    node_id = state["node_id"]
    checks = [c for c in state["checks"] if c.id not in set(state.get("failing", []))]
    feedback = list(state.get("feedback", []))
    if state.get("failing"):
        feedback.append(f"dropped checks rejecting the reference: {state['failing']}")
    if state.get("escaped"):
        # Effects a perturbation got past: take the programmatic checks that pin them.
        known = {c.model_dump_json(exclude={"id", "description"}) for c in checks}
        extra = [
            c
            for c in programmatic_checks(ctx.graph, ctx.replay, node_id, ctx.contracts)
            if c.model_dump_json(exclude={"id", "description"}) not in known
        ]
        checks += extra
        feedback.append(f"added {len(extra)} check(s) for effects missed by: {state['escaped']}")
    checks = [c.model_copy(update={"id": f"{node_id}.g{i + 1}"}) for i, c in enumerate(checks)]
    return {
        "checks": checks,
        "revisions": state.get("revisions", 0) + 1,
        "feedback": feedback,
        "strategy": state.get("strategy", "programmatic") + "+revised",
    }


def route_after_accept(state: VerifierState) -> str:
    return "generate" if state.get("accepted") else END


def route_after_test(state: VerifierState, runtime: Runtime[VerifierContext]) -> str:
    ok = all(t.ok for t in state.get("tests", []))
    if ok or state.get("revisions", 0) >= runtime.context.max_revisions:
        return END
    return "revise"


def build_verifier_graph(*, checkpointer: Any = None) -> Any:
    g: StateGraph[VerifierState, VerifierContext, VerifierState, VerifierState] = StateGraph(
        VerifierState, context_schema=VerifierContext
    )
    g.add_node("accept", accept_node)
    g.add_node("generate", generate_node)
    g.add_node("test", test_node)
    g.add_node("revise", revise_node)
    g.add_edge(START, "accept")
    g.add_conditional_edges("accept", route_after_accept, {"generate": "generate", END: END})
    g.add_edge("generate", "test")
    g.add_conditional_edges("test", route_after_test, {"revise": "revise", END: END})
    g.add_edge("revise", "test")
    return g.compile(checkpointer=checkpointer)


def generate_verifier(node_id: str, ctx: VerifierContext) -> tuple[GeneratedVerifier | None, str]:
    """A tested verifier for one node, or None with the reason (reference not accepted, or the
    checks could not be made to pass their tests)."""
    out = build_verifier_graph().invoke({"node_id": node_id}, context=ctx)
    if not out.get("accepted"):
        return None, f"reference not accepted: {out.get('reason')}"
    v = build_verifier(
        ctx.graph,
        ctx.replay,
        node_id,
        ctx.contracts,
        out["checks"],
        strategy=out.get("strategy", "programmatic"),
    ).model_copy(update={"tests": out.get("tests", []), "feedback": out.get("feedback", [])})
    if not v.tests_pass:
        bad = [t.name for t in v.tests if not t.ok]
        return v, f"tests fail: {bad}"
    return v, "ok"
