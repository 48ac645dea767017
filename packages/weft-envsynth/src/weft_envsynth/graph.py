"""The envsynth LangGraph: analyze -> schema -> contracts -> backend -> validate -> (revise ->
schema | contracts | backend -> validate)* -> certify.

Nodes are plain functions of (state, llm) returning partial updates; `build_envsynth_graph` binds
the chat model (or None for the programmatic strategies) and compiles the graph.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langgraph.graph import END, START, StateGraph

from weft_envsynth.analyze import analyze
from weft_envsynth.backend import backend
from weft_envsynth.certify import certify_state
from weft_envsynth.contracts import contracts
from weft_envsynth.errors import SpecRejected
from weft_envsynth.revise import plan_revision, relax_schema
from weft_envsynth.schema import schema, schema_programmatic
from weft_envsynth.seed import seed_programmatic
from weft_envsynth.settings import EnvSynthSettings
from weft_envsynth.state import EnvSynthState
from weft_envsynth.validate import validate


def analyze_node(state: EnvSynthState, llm: Any = None) -> dict[str, Any]:
    settings = EnvSynthSettings()
    if len(state.spec.tools) > settings.max_tools:
        return {
            "error": f"{len(state.spec.tools)} tools is more than max_tools={settings.max_tools}"
        }
    try:
        analysis, notes = analyze(state.spec, llm)
    except SpecRejected as exc:
        return {"error": exc.reason}
    out = Path(state.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    work = tempfile.mkdtemp(prefix=f".work-{state.spec.slug}-", dir=out)
    strategy = "programmatic" if llm is None else model_name(llm)
    return {
        "analysis": analysis,
        "notes": state.notes + notes,
        "work_dir": work,
        "strategy": strategy,
    }


def model_name(llm: Any) -> str:
    """A chat model's name for the manifest's `strategy` field."""
    return str(
        getattr(llm, "model_name", None) or getattr(llm, "model", None) or type(llm).__name__
    )


def schema_node(state: EnvSynthState, llm: Any = None) -> dict[str, Any]:
    assert state.analysis is not None
    settings = EnvSynthSettings()
    notes = list(state.notes)
    if state.revise_target == "schema" and state.entities is not None:
        model, n = (
            schema(state.spec, state.analysis, llm, feedback=state.feedback)
            if llm is not None
            else (schema_programmatic(state.spec, state.analysis), [])
        )
        notes += n
        model, n = relax_schema(model if llm is not None else state.entities, state.feedback)
        notes += n
    else:
        model, n = schema(state.spec, state.analysis, llm)
        notes += n
    seed = seed_programmatic(
        model, state.spec, rows=settings.seed_rows, reference_rows=settings.reference_rows
    )
    return {"entities": model, "seed": seed, "notes": notes}


def contracts_node(state: EnvSynthState, llm: Any = None) -> dict[str, Any]:
    assert state.analysis is not None and state.entities is not None
    only = set(state.redo) if state.revise_target == "contracts" else None
    cs, notes, failed = contracts(
        state.spec,
        state.analysis,
        state.entities,
        llm,
        only=only,
        previous=state.contracts,
        feedback=state.feedback if state.revise_target == "contracts" else None,
        force_programmatic=set(state.programmatic_tools),
    )
    uncertified = {
        **{k: v for k, v in state.uncertified.items() if k not in {c.tool for c in cs.contracts}},
        **failed,
    }
    return {"contracts": cs, "notes": state.notes + notes, "uncertified": uncertified}


def backend_node(state: EnvSynthState, llm: Any = None) -> dict[str, Any]:
    assert state.entities is not None and state.contracts is not None and state.work_dir is not None
    from weft_envsynth._internal.assemble import build_seed, write_sources

    settings = EnvSynthSettings()
    only = set(state.redo) if state.revise_target in {"contracts", "backend"} else None
    plan, notes = backend(
        state.spec,
        state.entities,
        state.contracts,
        llm,
        only=only,
        previous=state.backend,
        feedback=state.feedback if state.revise_target == "backend" else None,
        force_programmatic=set(state.programmatic_tools),
    )
    work = Path(state.work_dir)
    previous = Path(state.previous_bundle) / "migrations" if state.previous_bundle else None
    try:
        head = write_sources(
            work,
            state.spec,
            state.entities,
            state.contracts,
            plan,
            format_code=settings.format_code,
            previous_migrations=previous,
        )
        _seed, seed_notes = build_seed(work, state.seed) if state.seed is not None else (None, [])
    except Exception as exc:  # generated code that cannot even be written is a structural failure
        return {
            "backend": plan,
            "notes": state.notes + notes,
            "build_error": f"{type(exc).__name__}: {exc}"[:300],
        }
    return {
        "backend": plan,
        "notes": state.notes + notes + seed_notes[:5],
        "schema_revision": head,
        "build_error": None,
    }


def validate_node(state: EnvSynthState) -> dict[str, Any]:
    assert state.entities is not None and state.contracts is not None and state.work_dir is not None
    from weft_envsynth.plans import CheckRecord, ValidationReport

    history = [*state.history, state.report] if state.report is not None else list(state.history)
    if state.build_error:
        report = ValidationReport(
            round=state.round + 1,
            server_error=state.build_error,
            checks=[
                CheckRecord(
                    tool=t.name,
                    name="build",
                    kind="structural",
                    passed=False,
                    category="structural",
                    detail=state.build_error,
                )
                for t in state.spec.tools
            ],
        )
    else:
        report = validate(
            Path(state.work_dir), state.spec, state.entities, state.contracts, round=state.round + 1
        )
    return {"report": report, "history": history, "round": state.round + 1}


def revise_node(state: EnvSynthState) -> dict[str, Any]:
    update = plan_revision(state)
    # A tool that fails again after a model revision is regenerated programmatically next time.
    again = set(state.redo) & set(update["redo"])
    update["programmatic_tools"] = sorted(set(state.programmatic_tools) | again)
    update["notes"] = [
        *state.notes,
        f"round {state.round}: revise {update['revise_target']} for {len(update['redo'])} tool(s)",
    ]
    return update


def certify_node(state: EnvSynthState) -> dict[str, Any]:
    return certify_state(state)


def build_envsynth_graph(llm: Any = None, *, rounds: int = 3, checkpointer: Any = None) -> Any:
    """The compiled envsynth graph. Input: {"spec": MCPSpec, "out_dir": str} (an EnvSynthState).

    `llm`: any LangChain chat model (structured output), or None for the programmatic strategies.
    `rounds`: the revision budget. `checkpointer`: any LangGraph checkpointer (e.g. InMemorySaver).
    """

    def route_after_analyze(state: EnvSynthState) -> str:
        return "certify" if state.error else "schema"

    def route_after_validate(state: EnvSynthState) -> str:
        report = state.report
        if report is None or not report.failing_tools() or state.round > rounds:
            return "certify"
        plan = plan_revision(state)
        if plan["revise_target"] is None:
            return "certify"
        if llm is None:
            # Programmatic products are deterministic: only relaxing the schema can change them.
            if plan["revise_target"] != "schema" or state.entities is None:
                return "certify"
            relaxed, _ = relax_schema(state.entities, plan["feedback"])
            if relaxed == state.entities:
                return "certify"
        elif set(plan["redo"]) <= set(state.programmatic_tools):
            return "certify"
        return "revise"

    def route_after_revise(state: EnvSynthState) -> str:
        return state.revise_target or "certify"

    g: StateGraph[EnvSynthState] = StateGraph(EnvSynthState)
    g.add_node("analyze", lambda s: analyze_node(s, llm))
    g.add_node("schema", lambda s: schema_node(s, llm))
    g.add_node("contracts", lambda s: contracts_node(s, llm))
    g.add_node("backend", lambda s: backend_node(s, llm))
    g.add_node("validate", validate_node)
    g.add_node("revise", revise_node)
    g.add_node("certify", certify_node)
    g.add_edge(START, "analyze")
    g.add_conditional_edges(
        "analyze", route_after_analyze, {"schema": "schema", "certify": "certify"}
    )
    g.add_edge("schema", "contracts")
    g.add_edge("contracts", "backend")
    g.add_edge("backend", "validate")
    g.add_conditional_edges(
        "validate", route_after_validate, {"revise": "revise", "certify": "certify"}
    )
    g.add_conditional_edges(
        "revise",
        route_after_revise,
        {"schema": "schema", "contracts": "contracts", "backend": "backend", "certify": "certify"},
    )
    g.add_edge("certify", END)
    return g.compile(checkpointer=checkpointer)
