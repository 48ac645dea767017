"""LLM strategies driven by a scripted chat model, including a faulty backend that validation must
catch and revision must repair."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from weft_core.models import MCPSpec
from weft_core.testing import ScriptedChatModel
from weft_envsynth.analyze import analyze, analyze_programmatic
from weft_envsynth.backend import backend
from weft_envsynth.contracts import contracts
from weft_envsynth.graph import build_envsynth_graph
from weft_envsynth.plans import BackendPlan
from weft_envsynth.schema import schema_programmatic
from weft_envsynth.state import EnvSynthContext, EnvSynthState


def _products(spec: MCPSpec) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], BackendPlan]:
    a = analyze_programmatic(spec)
    m = schema_programmatic(spec, a)
    cs, _, _ = contracts(spec, a, m)
    plan, _ = backend(spec, m, cs)
    return a.model_dump(mode="json"), m.model_dump(mode="json"), cs.model_dump(mode="json"), plan


def _tool_call(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "c1"}])


def _unbound(spec: MCPSpec) -> AIMessage:
    """The model's binding of a tool set with no SQL, version-control or record-graph tool."""
    return _tool_call(
        "BindingAnswer", {"tools": [{"tool": t.name, "family": "none"} for t in spec.tools]}
    )


def _faulty(plan: BackendPlan, tool: str, **change: Any) -> dict[str, Any]:
    routes = [r.model_copy(update=change) if r.tool == tool else r for r in plan.routes]
    return BackendPlan(routes=routes).model_dump(mode="json")


def _run(spec: MCPSpec, llm: Any, out: Path, rounds: int = 3) -> EnvSynthState:
    graph = build_envsynth_graph()
    state = EnvSynthState(spec=spec, out_dir=str(out), rounds=rounds)
    return EnvSynthState.model_validate(graph.invoke(state, context=EnvSynthContext(llm=llm)))


def test_faulty_backend_is_caught_and_repaired_by_the_model(
    tmp_path: Path, helpdesk_spec: MCPSpec
) -> None:
    analysis, schema, cset, plan = _products(helpdesk_spec)
    llm = ScriptedChatModel(
        [
            _unbound(helpdesk_spec),
            _tool_call("Analysis", analysis),
            _tool_call("EntityModel", schema),
            _tool_call("ContractSet", cset),
            # the model forgets to commit in update_ticket: statically fine, wrong when executed
            _tool_call("BackendPlan", _faulty(plan, "update_ticket", commit=False)),
            # asked again with the validation feedback, it fixes the route
            _tool_call(
                "BackendPlan", {"routes": [plan.route("update_ticket").model_dump(mode="json")]}
            ),
        ]
    )
    final = _run(helpdesk_spec, llm, tmp_path)
    llm.assert_exhausted()
    first = final.history[0]
    failing = first.failing_tools()
    assert set(failing) == {"update_ticket"} and {c.category for c in failing["update_ticket"]} == {
        "runtime"
    }
    revision_prompt = str(llm.prompts[5][-1].content)
    assert "not persisted" in revision_prompt and "update_ticket" in revision_prompt
    assert final.round == 2 and final.manifest is not None and final.manifest.certified
    assert final.manifest.strategy == "ScriptedChatModel"
    assert final.backend is not None and final.backend.route("update_ticket").commit


def test_model_that_stays_wrong_is_replaced_by_the_programmatic_route(
    tmp_path: Path, helpdesk_spec: MCPSpec
) -> None:
    analysis, schema, cset, plan = _products(helpdesk_spec)
    wrong = _faulty(
        plan,
        "update_ticket",
        assignments={"description": "subject", "priority": "priority", "status": "status"},
    )
    llm = ScriptedChatModel(
        [
            _unbound(helpdesk_spec),
            _tool_call("Analysis", analysis),
            _tool_call("EntityModel", schema),
            _tool_call("ContractSet", cset),
            _tool_call("BackendPlan", wrong),  # writes subject into description: a mapping error
            _tool_call("ContractSet", cset),  # revise -> contracts (mapping) -> backend
            _tool_call("BackendPlan", wrong),  # the model repeats its bug
        ]
    )
    final = _run(helpdesk_spec, llm, tmp_path)
    llm.assert_exhausted()
    assert "mapping" in {c.category for c in final.history[0].failing_tools()["update_ticket"]}
    assert "update_ticket" in final.programmatic_tools
    assert final.manifest is not None and final.manifest.certified
    assert (
        final.backend is not None
        and final.backend.route("update_ticket").assignments["subject"] == "subject"
    )


def test_unusable_or_inconsistent_model_output_falls_back(helpdesk_spec: MCPSpec) -> None:
    garbage = ScriptedChatModel(["I think there are some tickets."])
    a, notes = analyze(helpdesk_spec, garbage)
    assert a == analyze_programmatic(helpdesk_spec) and "unusable" in notes[0]
    analysis = analyze_programmatic(helpdesk_spec).model_dump(mode="json")
    analysis["tools"] = analysis["tools"][:-1]  # forgets a tool
    forgetful = ScriptedChatModel([_unbound(helpdesk_spec), {**analysis}])
    a, notes = analyze(helpdesk_spec, forgetful)
    assert "rejected" in notes[-1] and "list_comments" in notes[-1]


def test_model_backend_route_with_unknown_argument_is_rejected(helpdesk_spec: MCPSpec) -> None:
    _, _, _, plan = _products(helpdesk_spec)
    a = analyze_programmatic(helpdesk_spec)
    m = schema_programmatic(helpdesk_spec, a)
    cs, _, _ = contracts(helpdesk_spec, a, m)
    bad = _faulty(plan, "get_ticket", key_argument="ticket")
    got, notes = backend(helpdesk_spec, m, cs, ScriptedChatModel([bad]))
    assert got.route("get_ticket").key_argument == "ticket_id"
    assert any("get_ticket rejected" in n for n in notes)
