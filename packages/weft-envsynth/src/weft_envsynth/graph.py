"""The envsynth LangGraph: analyze -> schema -> contracts -> backend -> validate -> (revise ->
schema | contracts | backend -> validate)* -> certify.

Nodes are plain functions of the state (and the run's `Runtime[EnvSynthContext]`, which carries
the chat model) returning partial updates; `notes` and `history` are appended to by reducers.
Routers only read the state: the validate node decides whether another revision runs.
`build_envsynth_graph` compiles the graph once; the model is given per run:
`graph.invoke(state, context=EnvSynthContext(llm=model))`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from weft_core.llm import model_display_name
from weft_envsynth.analyze import analyze
from weft_envsynth.backend import backend
from weft_envsynth.bindings import ToolBindings
from weft_envsynth.certify import certify_state
from weft_envsynth.contracts import contracts
from weft_envsynth.errors import SpecRejected
from weft_envsynth.revise import plan_revision, relax_schema
from weft_envsynth.schema import schema, schema_programmatic
from weft_envsynth.seed import seed_programmatic
from weft_envsynth.settings import EnvSynthSettings
from weft_envsynth.state import EnvSynthContext, EnvSynthState, Revision
from weft_envsynth.validate import validate


def _llm(runtime: Runtime[EnvSynthContext] | None) -> BaseChatModel | None:
    return runtime.context.llm if runtime is not None and runtime.context is not None else None


def _bindings(state: EnvSynthState) -> ToolBindings | None:
    return state.analysis.bindings if state.analysis is not None else None


def analyze_node(state: EnvSynthState, runtime: Runtime[EnvSynthContext]) -> dict[str, Any]:
    llm = _llm(runtime)
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
    strategy = model_display_name(llm)
    return {
        "analysis": analysis,
        "notes": notes,
        "work_dir": work,
        "strategy": strategy,
    }


def schema_node(state: EnvSynthState, runtime: Runtime[EnvSynthContext]) -> dict[str, Any]:
    llm = _llm(runtime)
    assert state.analysis is not None
    settings = EnvSynthSettings()
    notes: list[str] = []
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


def contracts_node(state: EnvSynthState, runtime: Runtime[EnvSynthContext]) -> dict[str, Any]:
    llm = _llm(runtime)
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
    return {"contracts": cs, "notes": notes, "uncertified": uncertified}


def backend_node(state: EnvSynthState, runtime: Runtime[EnvSynthContext]) -> dict[str, Any]:
    llm = _llm(runtime)
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
        bindings=_bindings(state),
    )
    work = Path(state.work_dir)
    work.mkdir(parents=True, exist_ok=True)  # a replayed checkpoint's folder may be gone
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
            bindings=_bindings(state),
        )
        _seed, seed_notes = build_seed(work, state.seed) if state.seed is not None else (None, [])
    except Exception as exc:  # generated code that cannot even be written is a structural failure
        return {
            "backend": plan,
            "notes": notes,
            "build_error": f"{type(exc).__name__}: {exc}"[:300],
        }
    code: dict[str, dict[str, Any]] = {}
    if llm is not None and settings.route_code:
        from weft_envsynth.routecode import write_route_code

        tools = set(only or {r.tool for r in plan.routes}) - set(state.programmatic_tools)
        plan, code_notes, outcomes = write_route_code(
            work,
            state.spec,
            state.entities,
            state.contracts,
            plan,
            llm,
            rounds=settings.route_code_rounds,
            tools=tools,
            format_code=settings.format_code,
        )
        notes += code_notes
        code = {t: o.model_dump(mode="json") for t, o in outcomes.items()}
    return {
        "backend": plan,
        "notes": notes + seed_notes[:5],
        "schema_revision": head,
        "build_error": None,
        **({"route_code": {**state.route_code, **code}} if code else {}),
    }


def validate_node(state: EnvSynthState, runtime: Runtime[EnvSynthContext]) -> dict[str, Any]:
    assert state.entities is not None and state.contracts is not None and state.work_dir is not None
    from weft_envsynth.plans import CheckRecord, ValidationReport

    work_update = _rebuilt_work_dir(state)
    state = state.model_copy(update=work_update)
    assert state.entities is not None and state.contracts is not None and state.work_dir is not None
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
    update: dict[str, Any] = {
        **work_update,
        "report": report,
        "history": [state.report] if state.report is not None else [],
        "round": state.round + 1,
    }
    update["next_revision"] = _next_revision(
        state.model_copy(update={"report": report, "round": state.round + 1}), _llm(runtime)
    )
    return update


def _next_revision(state: EnvSynthState, llm: BaseChatModel | None) -> Revision | None:
    """The revision another round would make, or None when certifying now is all that is left."""
    report = state.report
    if report is None or not report.failing_tools() or state.round > state.rounds:
        return None
    plan = plan_revision(state)
    if plan["revise_target"] is None:
        return None
    if llm is None:
        # Programmatic products are deterministic: only relaxing the schema can change them.
        if plan["revise_target"] != "schema" or state.entities is None:
            return None
        relaxed, _ = relax_schema(state.entities, plan["feedback"])
        if relaxed == state.entities:
            return None
    elif set(plan["redo"]) <= set(state.programmatic_tools):
        return None
    return Revision(target=plan["revise_target"], redo=plan["redo"], feedback=plan["feedback"])


def revise_node(state: EnvSynthState) -> dict[str, Any]:
    plan = state.next_revision
    assert plan is not None  # the router only sends a state with a planned revision here
    # A tool that fails again after a model revision is regenerated programmatically next time.
    again = set(state.redo) & set(plan.redo)
    return {
        "revise_target": plan.target,
        "redo": plan.redo,
        "feedback": plan.feedback,
        "programmatic_tools": sorted(set(state.programmatic_tools) | again),
        "notes": [f"round {state.round}: revise {plan.target} for {len(plan.redo)} tool(s)"],
    }


def certify_node(state: EnvSynthState) -> dict[str, Any]:
    return certify_state(state.model_copy(update=_rebuilt_work_dir(state)))


def _rebuilt_work_dir(state: EnvSynthState) -> dict[str, Any]:
    """{} when the working folder exists; else a new one rebuilt from the state's products.

    certify moves the working folder into place, so when a run is replayed from an earlier
    checkpoint the folder that checkpoint names is gone; the state holds every product the
    backend node wrote it from, so writing them again gives the same bundle.
    """
    if state.error is not None or (state.work_dir and Path(state.work_dir).is_dir()):
        return {}
    if state.entities is None or state.contracts is None or state.backend is None:
        return {}
    from weft_envsynth._internal.assemble import build_seed, write_sources

    out = Path(state.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".work-{state.spec.slug}-", dir=out))
    previous = Path(state.previous_bundle) / "migrations" if state.previous_bundle else None
    write_sources(
        work,
        state.spec,
        state.entities,
        state.contracts,
        state.backend,
        format_code=EnvSynthSettings().format_code,
        previous_migrations=previous,
        bindings=_bindings(state),
    )
    if state.seed is not None:
        build_seed(work, state.seed)
    return {"work_dir": str(work)}


def route_after_analyze(state: EnvSynthState) -> str:
    return "certify" if state.error else "schema"


def route_after_validate(state: EnvSynthState) -> str:
    return "revise" if state.next_revision is not None else "certify"


def route_after_revise(state: EnvSynthState) -> str:
    return state.revise_target or "certify"


def build_envsynth_graph(
    *, checkpointer: Checkpointer = None
) -> CompiledStateGraph[EnvSynthState, EnvSynthContext, EnvSynthState, EnvSynthState]:
    """The compiled envsynth graph. Input: an EnvSynthState ({"spec", "out_dir"}, `rounds` the
    revision budget); context: `EnvSynthContext(llm=...)` (None: programmatic strategies).
    `checkpointer`: any LangGraph checkpointer (e.g. InMemorySaver, SqliteSaver) to resume a run.
    Compile once and invoke per spec; a node is swapped by building your own StateGraph from the
    node functions of this module (see the package README).
    """
    g = StateGraph(EnvSynthState, context_schema=EnvSynthContext)
    g.add_node("analyze", analyze_node)
    g.add_node("schema", schema_node)
    g.add_node("contracts", contracts_node)
    g.add_node("backend", backend_node)
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
