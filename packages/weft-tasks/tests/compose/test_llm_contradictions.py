"""The LLM composition strategy with scripted models whose graphs are wrong in the ways a real
model gets them wrong: transitions that contradict each other on one object, a read of what an
earlier node deleted, an upstream outcome that does not exist, a task of an unknown MCP, and
replies that are not a graph at all. Every one is caught with its reason, shown to the model on
its next attempt, and (when the model never repairs it) rejected by the corpus pipeline."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from weft_core.testing import ScriptedChatModel
from weft_tasks.atomic.megamcp import megamcp_client
from weft_tasks.compose.composer import CompositionState, compose_graph
from weft_tasks.compose.pipeline import Composer
from weft_tasks.compose.profiles import Profile, ProfileSet

_MCPS = ("crm", "helpdesk")


def _state(libraries: list[Any]) -> tuple[CompositionState, dict[str, Any]]:
    bundles = {lib.mcp: lib.bundle for lib in libraries if lib.mcp in _MCPS}
    pool = [t for lib in libraries if lib.mcp in bundles for t in lib.tasks]
    state = CompositionState(
        graph_id="g", profile="Standard", objective="help Ada", nodes_wanted=2, pool=pool
    )
    return state, bundles


def _ids(state: CompositionState) -> dict[tuple[str, ...], str]:
    return {tuple(t.tool_chain): t.id for t in state.pool}


def _draft(*nodes: str | dict[str, Any]) -> str:
    return json.dumps({"nodes": [n if isinstance(n, dict) else {"task_id": n} for n in nodes]})


def _wrong_graphs(state: CompositionState) -> dict[str, tuple[str, str, str]]:
    """name -> (draft, issue kind, words the reason must contain)."""
    t = _ids(state)
    close = t[("get_ticket", "close_ticket")]
    list_open = t[("list_tickets",)]
    delete = t[("find_customer", "delete_customer")]
    lookup = t[("find_customer", "get_customer")]
    update = t[("find_customer", "update_customer")]
    ticket = t[("find_requester", "create_ticket")]
    return {
        # the listing of open tickets must report the ticket n1 has just closed
        "closed then listed as open": (
            _draft(close, list_open),
            "contradiction",
            "n2 needs status='open' of helpdesk.ticket",
        ),
        # the second close needs an open ticket: closed -> closed is no transition
        "closed twice": (_draft(close, close), "contradiction", "again after n1"),
        "deleted then read": (
            _draft(delete, lookup),
            "contradiction",
            "which n1 deleted before it",
        ),
        "deleted then updated": (_draft(delete, update), "contradiction", "undoes n1's change"),
        "upstream outcome that does not exist": (
            _draft(lookup, {"task_id": ticket, "upstream": {"email": "n1.phone"}}),
            "unsourced_input",
            "outcome 'phone', which n1 does not produce",
        ),
        # each node waits for the other: the node order is free, a cycle is not
        "nodes that feed each other": (
            _draft(
                {"task_id": ticket, "upstream": {"email": "n2.email"}},
                {"task_id": lookup, "upstream": {"email": "n1.email"}},
            ),
            "cycle",
            "the dependency edges form a cycle",
        ),
        "task of an unknown MCP": (
            _draft("payroll.t001", lookup),
            "unselected_task",
            "MCP 'payroll' is not in this combination",
        ),
        "unknown task of a known MCP": (
            _draft(lookup, "helpdesk.t999"),
            "unselected_task",
            "'helpdesk.t999', which was not among the selected tasks",
        ),
    }


def _good(state: CompositionState) -> str:
    t = _ids(state)
    return _draft(t[("find_customer", "get_customer")], t[("get_ticket", "close_ticket")])


def test_each_wrong_graph_is_caught_with_its_reason(libraries: list[Any]) -> None:
    state, bundles = _state(libraries)
    for name, (draft, kind, words) in _wrong_graphs(state).items():
        llm = ScriptedChatModel([draft, draft])  # a model that never repairs its graph
        out = compose_graph(state, bundles, llm)
        llm.assert_exhausted()
        assert out.graph is not None, name
        reasons = [i.message for i in out.issues if i.kind == kind]
        assert any(words in r for r in reasons), (name, [(i.kind, i.message) for i in out.issues])


def test_a_wrong_graph_is_repaired_from_the_reason_shown(libraries: list[Any]) -> None:
    state, bundles = _state(libraries)
    for name, (draft, _, words) in _wrong_graphs(state).items():
        llm = ScriptedChatModel([draft, _good(state)])
        out = compose_graph(state, bundles, llm)
        assert out.attempts == 2 and out.issues == [], (name, [i.message for i in out.issues])
        # the second prompt showed the model what was wrong with its first graph
        retry = str(llm.prompts[-1][-1].content)
        assert "previous graph had these problems" in retry and words in retry, name


def test_malformed_replies_are_invalid_output(libraries: list[Any]) -> None:
    state, bundles = _state(libraries)
    garbage = [
        "{nodes: [{task_id: crm.t002}",  # not JSON
        json.dumps({"nodes": []}),  # JSON, but no node
        json.dumps({"nodes": [{"task": "crm.t002"}]}),  # JSON, node without a task id
        "Sure! I would first look up the customer and then close the ticket.",
    ]
    for bad in garbage:
        # ask_structured asks once more with the error; both attempts of the composer fail
        out = compose_graph(state, bundles, ScriptedChatModel([bad] * 4))
        assert out.graph is None and out.attempts == 2
        assert [i.kind for i in out.issues] == ["invalid_output"], bad
        assert out.issues[0].message.startswith("composition output invalid"), bad
    # a malformed first reply, then a valid graph: composed
    llm = ScriptedChatModel([garbage[0], _good(state)])
    out = compose_graph(state, bundles, llm)
    assert out.graph is not None and out.issues == [] and out.attempts == 1


_POOL_ID = re.compile(r"'task_id': '([^']+)'")


def _contradicting(messages: list[BaseMessage]) -> str:
    """A composer reply that deletes a customer and then reads it, or closes a ticket twice,
    built from whatever candidate pool the prompt shows."""
    pool = set(_POOL_ID.findall(str(messages[-1].content)))
    by_chain = {"crm.t006": "delete", "crm.t002": "read", "helpdesk.t004": "close"}
    have = {by_chain[t]: t for t in pool if t in by_chain}
    if "delete" in have and "read" in have:
        return _draft(have["delete"], have["read"])
    if "close" in have:
        return _draft(have["close"], have["close"])
    raise AssertionError(f"the drawn pool has no contradictory pair: {sorted(pool)}")


async def test_the_pipeline_counts_and_never_writes_a_contradiction(
    libraries: list[Any], tmp_path: Path
) -> None:
    libs = [lib for lib in libraries if lib.mcp in _MCPS]
    profile = Profile(name="Pair", tasks=[2, 2], mcps=[2, 2], domains=[1, 2], proportion=1.0)
    verdict = {
        "coherent": True,
        "objective": "Sort out Ada's support ticket and keep her CRM record right",
        "mcps": [],
    }
    llm = ScriptedChatModel([json.dumps(verdict), _contradicting, _contradicting])
    async with megamcp_client(data_dir=tmp_path / ".megamcp") as client:
        composer = Composer(
            libs, client, tmp_path, profiles=ProfileSet(profiles=[profile]), llm=llm
        )
        assert composer.sample(profile) is None
    llm.assert_exhausted()
    assert composer.rejections == {"graph check: contradiction": 1}
    assert composer.accepted == [] and not (tmp_path / "tasks").exists()
