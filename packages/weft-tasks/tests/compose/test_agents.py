"""Coherence judge and composition agent: programmatic strategies, and LLM strategies with
scripted models whose wrong answers the deterministic checks must catch."""

from __future__ import annotations

import json
from typing import Any

from weft_tasks.compose.coherence import check_coherence
from weft_tasks.compose.composer import CompositionState, compose_graph


def _bundles(libraries: list[Any], *names: str) -> list[Any]:
    by = {lib.mcp: lib.bundle for lib in libraries}
    return [by[n] for n in names]


def test_programmatic_judge(libraries: list[Any]) -> None:
    ok = check_coherence(_bundles(libraries, "crm", "billing", "notes"))
    assert ok.rejection is None and ok.verdict and ok.verdict.coherent
    assert "email" in ok.verdict.objective and "notes" in ok.verdict.objective
    solo = check_coherence(_bundles(libraries, "notes"))
    assert solo.rejection and "business data" in solo.rejection


def test_llm_judge_wrong_answers_are_rejections(libraries: list[Any], scripted: Any) -> None:
    b = _bundles(libraries, "crm", "helpdesk")
    good = {
        "coherent": True,
        "objective": "Resolve a customer's support issue and update her CRM tier",
        "mcps": ["crm", "helpdesk"],
    }
    assert check_coherence(b, scripted([json.dumps(good)])).rejection is None
    outside = {**good, "mcps": ["crm", "helpdesk", "payroll"]}
    assert "outside the combination" in (
        check_coherence(b, scripted([json.dumps(outside)])).rejection or ""
    )
    partial = {**good, "mcps": ["crm"]}
    assert "leaves out" in (check_coherence(b, scripted([json.dumps(partial)])).rejection or "")
    empty = {**good, "objective": ""}
    assert "no objective" in (check_coherence(b, scripted([json.dumps(empty)])).rejection or "")
    no = {
        "coherent": False,
        "reason": "a CRM and a helpdesk serve different people",
        "mcps": ["crm", "helpdesk"],
    }
    assert "incoherent" in (check_coherence(b, scripted([json.dumps(no)])).rejection or "")
    garbage = check_coherence(b, scripted(["maybe?", "still not sure"]))
    assert (garbage.rejection or "").startswith("judge output invalid")


def _state(libraries: list[Any], k: int = 4) -> tuple[CompositionState, dict[str, Any]]:
    bundles = {lib.mcp: lib.bundle for lib in libraries if lib.mcp in ("crm", "helpdesk")}
    pool = [t for lib in libraries if lib.mcp in bundles for t in lib.tasks]
    return CompositionState(
        graph_id="g", profile="Standard", objective="help Ada", nodes_wanted=k, pool=pool
    ), bundles


def test_llm_composer_is_checked_and_retried(libraries: list[Any], scripted: Any) -> None:
    state, bundles = _state(libraries)
    by_chain = {tuple(t.tool_chain): t.id for t in state.pool}
    lookup = by_chain[("find_customer", "get_customer")]
    ticket = by_chain[("find_requester", "create_ticket")]
    close = by_chain[("get_ticket", "close_ticket")]  # read before write
    update = by_chain[("find_customer", "update_customer")]
    bad = {
        "nodes": [
            {"task_id": "crm.t999"},
            {"task_id": ticket, "upstream": {"email": "n3.nope"}},
            {"task_id": lookup},
        ]
    }
    good = {
        "nodes": [
            {"task_id": lookup},
            {"task_id": ticket, "upstream": {"email": "n1.email"}},
            {"task_id": close},
            {"task_id": update},
        ]
    }
    llm = scripted([json.dumps(bad), json.dumps(good)])
    out = compose_graph(state, bundles, llm)
    assert out.attempts == 2 and out.issues == [], [i.message for i in out.issues]
    assert out.graph is not None
    n2 = out.graph.node("n2")
    email = next(i for i in n2.inputs if i.name == "email")
    assert email.source == "upstream" and email.from_node == "n1"

    # a model that never fixes its graph: the issues stay, and the graph is not accepted
    llm = scripted([json.dumps(bad), json.dumps(bad)])
    out = compose_graph(state, bundles, llm)
    kinds = {i.kind for i in out.issues}
    assert {"unselected_task", "unsourced_input"} <= kinds


def test_programmatic_composer_respects_size_and_mcps(libraries: list[Any]) -> None:
    state, bundles = _state(libraries, k=3)
    out = compose_graph(state, bundles)
    assert out.graph is not None and not out.issues
    assert len(out.graph.nodes) == 3 and set(out.graph.mcps) == {"crm", "helpdesk"}
