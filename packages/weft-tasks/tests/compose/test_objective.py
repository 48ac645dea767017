"""Objectives written from the composed graph: by rules, and by a scripted chat model whose
wrong objectives (a tool name, a dropped entity, a value a partial view withholds, no JSON) are
rejected with their reason."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from weft_core.models import Disclosure
from weft_core.testing import ScriptedChatModel
from weft_tasks.atomic.megamcp import megamcp_client
from weft_tasks.compose.composer import CompositionState, compose_graph
from weft_tasks.compose.objective import (
    forbidden_values,
    llm_objective,
    objective_problems,
    write_objective,
)
from weft_tasks.compose.pipeline import Composer
from weft_tasks.compose.profiles import Profile, ProfileSet
from weft_tasks.settings import TasksSettings
from weft_tasks.views.disclosure import hidden_values


def _composed(libraries: list[Any], names: tuple[str, ...], k: int) -> tuple[Any, dict[str, Any]]:
    bundles = {lib.mcp: lib.bundle for lib in libraries if lib.mcp in names}
    pool = [t for lib in libraries if lib.mcp in bundles for t in lib.tasks]
    state = CompositionState(graph_id="g", profile="S", objective="o", nodes_wanted=k, pool=pool)
    out = compose_graph(state, bundles)
    assert out.graph is not None and not out.issues
    return out.graph, bundles


def test_the_objective_follows_the_graph(libraries: list[Any]) -> None:
    graph, bundles = _composed(libraries, ("crm", "helpdesk"), 4)
    text = write_objective(graph, bundles)
    assert objective_problems(text, graph, bundles) == [], text
    # every node's effect, in dependency order, with the MCP's domain
    steps = [
        "look up the customer in CRM",
        "create a new customer in CRM",
        "create a new ticket in",
        "update the customer in CRM",
    ]
    at = [text.find(s) for s in steps]
    assert -1 not in at and at == sorted(at), text
    # the shared object by the value the user gives, and the value that crosses MCPs
    assert text.startswith("For the customer ada@example.com:")
    assert "using the email and city found in CRM" in text
    # the city is found in the CRM by step n1: the objective never states it
    assert "London" in forbidden_values(graph) and "London" not in text


def test_another_graph_gets_another_objective(libraries: list[Any]) -> None:
    a, ba = _composed(libraries, ("crm", "helpdesk"), 4)
    b, bb = _composed(libraries, ("crm", "billing", "notes"), 3)
    ta, tb = write_objective(a, ba), write_objective(b, bb)
    assert ta != tb
    assert "create a new invoice in Finance using the tier found in CRM" in tb
    assert "write the file" in tb and "ticket" not in tb


def test_problems_name_tools_dropped_entities_and_withheld_values(libraries: list[Any]) -> None:
    graph, bundles = _composed(libraries, ("crm", "helpdesk"), 4)
    good = write_objective(graph, bundles)
    assert any(
        "tool 'create_ticket'" in p
        for p in objective_problems(good + " Call create_ticket.", graph, bundles)
    )
    assert any(
        "drops the 'ticket'" in p
        for p in objective_problems(
            "For Ada: look up the customer and update the customer.", graph, bundles
        )
    )
    assert any(
        "'London'" in p for p in objective_problems(good + " Her city is London.", graph, bundles)
    )
    # an upstream value that is only a word of the task's vocabulary is no leak
    n3 = graph.node("n3")
    inputs = [
        i.model_copy(update={"value": "ticket"}) if i.name == "subject" else i for i in n3.inputs
    ]
    assert any(i.source == "upstream" for i in inputs if i.name == "subject")
    nodes = [n.model_copy(update={"inputs": inputs}) if n.id == "n3" else n for n in graph.nodes]
    worded = graph.model_copy(update={"nodes": nodes})
    assert "ticket" in forbidden_values(worded)
    assert objective_problems(write_objective(worded, bundles), worded, bundles) == []
    # what a partial view describes is forbidden too
    partial = {v for n in graph.nodes for v in hidden_values(n, Disclosure.PARTIAL, graph.bindings)}
    assert {v for v in partial if len(v) >= 3} - {"ada@example.com"} <= forbidden_values(graph)


def test_llm_writer_keeps_only_a_clean_objective(libraries: list[Any]) -> None:
    graph, bundles = _composed(libraries, ("crm", "helpdesk"), 4)
    clean = {
        "objective": "Help customer ada@example.com: check her customer record, register a new "
        "customer, open a support ticket from what the CRM shows, then update her customer record."
    }
    leaks_tool = {"objective": clean["objective"] + " Use update_customer for the last step."}
    leaks_value = {"objective": clean["objective"] + " Put London in the ticket subject."}
    drops = {"objective": "Help customer ada@example.com with her customer record."}

    llm = ScriptedChatModel([json.dumps(clean)])
    assert llm_objective(llm, graph, bundles) == (clean["objective"], [])

    # a leaking draft, then a clean one: the reason is shown and the clean one kept
    llm = ScriptedChatModel([json.dumps(leaks_tool), json.dumps(clean)])
    text, problems = llm_objective(llm, graph, bundles)
    assert text == clean["objective"] and problems == []
    assert "update_customer" in str(llm.prompts[-1][-1].content)
    # the model is never shown the values it must not state
    assert "London" not in str(llm.prompts[0])

    for bad, why in (
        (leaks_value, "'London'"),
        (drops, "drops the 'ticket'"),
        (leaks_tool, "tool"),
    ):
        llm = ScriptedChatModel([json.dumps(bad), json.dumps(bad)])
        text, problems = llm_objective(llm, graph, bundles)
        assert text is None and any(why in p for p in problems), problems
        llm.assert_exhausted()

    llm = ScriptedChatModel(["I think the objective is to help Ada."] * 4)
    text, problems = llm_objective(llm, graph, bundles)
    assert text is None and problems[0].startswith("objective output invalid")


_POOL = re.compile(r"'task_id': '([^']+)', 'mcp': '[^']+', 'intent': '([^']*)'")


def _one_read(messages: list[BaseMessage]) -> str:
    """A valid one-node composition: the first read of the drawn pool."""
    pool = _POOL.findall(str(messages[-1].content))
    tid = next(t for t, intent in pool if intent.startswith(("Look up", "List")))
    return json.dumps({"nodes": [{"task_id": tid}]})


async def test_the_pipeline_rejects_a_bad_objective(libraries: list[Any], tmp_path: Path) -> None:
    libs = [lib for lib in libraries if lib.mcp in ("crm", "helpdesk")]
    profile = Profile(name="Pair", tasks=[2, 2], mcps=[2, 2], domains=[1, 2], proportion=1.0)
    verdict = {"coherent": True, "objective": "Sort out Ada's ticket and CRM record", "mcps": []}
    vague = {"objective": "Please do what the user needs, quickly and politely."}
    llm = ScriptedChatModel([json.dumps(verdict), _one_read, json.dumps(vague), json.dumps(vague)])
    async with megamcp_client(data_dir=tmp_path / ".megamcp") as client:
        composer = Composer(
            libs, client, tmp_path, profiles=ProfileSet(profiles=[profile]), llm=llm
        )
        assert composer.sample(profile) is None
    llm.assert_exhausted()
    assert composer.rejections == {"objective rejected": 1}
    assert "drops the" in composer.diagnostics[-1]


async def test_the_pipeline_writes_the_objective_from_the_graph(
    libraries: list[Any], tmp_path: Path
) -> None:
    libs = [lib for lib in libraries if lib.mcp in ("crm", "helpdesk")]
    profile = Profile(name="Pair", tasks=[2, 2], mcps=[2, 2], domains=[1, 2], proportion=1.0)
    async with megamcp_client(data_dir=tmp_path / ".megamcp") as client:
        composer = Composer(libs, client, tmp_path, profiles=ProfileSet(profiles=[profile]))
        job = composer.sample(profile)
    assert job is not None and composer.rejections == {}
    bundles = {lib.mcp: lib.bundle for lib in libs}
    assert job.graph.objective == write_objective(job.graph, bundles)


async def test_the_corpus_report_says_why_candidates_were_rejected(
    libraries: list[Any], tmp_path: Path
) -> None:
    libs = [lib for lib in libraries if lib.mcp in ("crm", "helpdesk")]
    profile = Profile(name="Pair", tasks=[2, 2], mcps=[2, 2], domains=[1, 2], proportion=1.0)
    verdict = {"coherent": True, "objective": "Sort out Ada's ticket and CRM record", "mcps": []}
    vague = {"objective": "Please do what the user needs, quickly and politely."}
    llm = ScriptedChatModel([json.dumps(verdict), _one_read, json.dumps(vague), json.dumps(vague)])
    async with megamcp_client(data_dir=tmp_path / ".megamcp") as client:
        composer = Composer(
            libs,
            client,
            tmp_path,
            profiles=ProfileSet(profiles=[profile]),
            llm=llm,
            settings=TasksSettings(max_attempts_factor=1),
        )
        report = await composer.run(1)
    assert report.tasks == [] and report.rejections["quota unmet (Pair)"] == 1
    assert len(report.diagnostics) == 1 and "objective: " in report.diagnostics[0]
    assert "drops the" in report.diagnostics[0]
    saved = json.loads((tmp_path / "corpus.json").read_text())
    assert saved["diagnostics"] == report.diagnostics
