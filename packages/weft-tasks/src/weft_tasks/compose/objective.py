"""The business objective of a composed task, written from the graph itself (paper §3.1.2).

The objective is shown to the agent and the evaluator in every view, so it must say what the
task achieves without giving away anything a view withholds. The programmatic writer reasons
over the graph: each node's operation and entity (from the MCP's contracts, a transition's target
value for an action), in dependency order, the object the nodes share (an entity binding, named
by a value the user states at every disclosure level) and the values that flow from one MCP to
another. An LLM writer (any chat model) writes it from the same facts; its text is rejected when
it names a tool, drops an entity the task acts on, or states a value that a partial view hides.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from weft_core.exceptions import ModelOutputError
from weft_core.llm import ask_structured
from weft_core.models import Disclosure, EdgeKind, TaskGraph, TaskNode
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.views.disclosure import hidden_values, intent_text, required_values

_VERBS = {
    "read": "look up the {e}",
    "search": "find the {e}",
    "list": "review the {e} records",
    "create": "create a new {e}",
    "update": "update the {e}",
    "delete": "remove the {e}",
    "file_read": "read the {e}",
    "file_list": "review the {e} listing",
    "file_write": "write the {e}",
    "file_delete": "delete the {e}",
    "compute": "work out the {e}",
}


def _words(name: str) -> str:
    return name.replace("_", " ").strip()


_RANK = {"create": 1, "file_write": 1, "update": 2, "action": 2, "delete": 3, "file_delete": 3}


def _contract(node: TaskNode, bundles: dict[str, BundleView]) -> Any:
    """The contract of the node's decisive tool: the one that changes the most (a create then
    read-back is a create), else its last tool."""
    b = bundles.get(node.task.mcp)
    if b is None or not node.task.tool_chain:
        return None
    found = [c for t in node.task.tool_chain if (c := b.contract(t)) is not None]
    if not found:
        return None
    return max(reversed(found), key=lambda c: _RANK.get(c.operation, 0))


def node_entity(node: TaskNode, bundles: dict[str, BundleView]) -> str:
    """The kind of object `node` acts on, in words (its last tool's contract entity)."""
    c = _contract(node, bundles)
    if c is not None and c.entity:
        return _words(c.entity)
    if node.task.entities:
        return _words(node.task.entities[0])
    if c is not None and c.operation.startswith("file_"):
        return "file"
    return "result"


def _clause(node: TaskNode, bundles: dict[str, BundleView]) -> str:
    c = _contract(node, bundles)
    e = node_entity(node, bundles)
    op = c.operation if c is not None else "compute"
    if op == "action":
        to = next((t.to_value for t in (c.transitions if c else []) if t.to_value), None)
        return f"mark the {e} {_words(str(to))}" if to is not None else f"process the {e}"
    return _VERBS.get(op, "handle the {e}").format(e=e)


def _domain(mcp: str, bundles: dict[str, BundleView]) -> str:
    b = bundles.get(mcp)
    return b.domain if b is not None and b.domain else _words(mcp)


def _stated_everywhere(graph: TaskGraph) -> set[str]:
    """Values some request states at every disclosure level (the user always gives them)."""
    out: set[str] | None = None
    for level in (Disclosure.FULL, Disclosure.PARTIAL, Disclosure.VAGUE):
        here = {v for n in graph.nodes for v in required_values(n, level, graph.bindings)}
        out = here if out is None else out & here
    return out or set()


def forbidden_values(graph: TaskGraph) -> set[str]:
    """Values the objective may never state: what a partial view describes instead of stating,
    and what an earlier step finds for a later one, unless the user states it somewhere."""
    stated = {
        v for n in graph.nodes for v in required_values(n, Disclosure.PARTIAL, graph.bindings)
    }
    hidden = {v for n in graph.nodes for v in hidden_values(n, Disclosure.PARTIAL, graph.bindings)}
    hidden |= {
        str(i.value)
        for n in graph.nodes
        for i in n.inputs
        if i.source != "given" and i.value is not None
    }
    return {v for v in hidden - stated if len(v) >= 3}


def required_entities(graph: TaskGraph, bundles: dict[str, BundleView]) -> list[str]:
    """The kinds of object every node acts on, and the bound business objects."""
    out = [node_entity(n, bundles) for n in graph.nodes] + [
        _words(b.entity) for b in graph.bindings
    ]
    return sorted({e for e in out if e != "result"})


def tool_names(graph: TaskGraph, bundles: dict[str, BundleView]) -> set[str]:
    names = {t for n in graph.nodes for t in n.task.tool_chain}
    for m in graph.mcps:
        if m in bundles:
            names |= set(bundles[m].tools)
    return names


def objective_problems(text: str, graph: TaskGraph, bundles: dict[str, BundleView]) -> list[str]:
    """Why `text` is not an acceptable objective for `graph`; empty when it is."""
    low = text.lower()
    if len(text.strip()) < 12:
        return ["the objective is empty"]
    problems: list[str] = []
    for tool in sorted(tool_names(graph, bundles)):
        # identifier-like names only: a one-word tool ("search") is also an ordinary word
        if ("_" in tool or any(ch.isdigit() for ch in tool)) and re.search(
            rf"(?<![a-z0-9_]){re.escape(tool.lower())}(?![a-z0-9_])", low
        ):
            problems.append(f"it names the tool {tool!r}")
    for e in required_entities(graph, bundles):
        if e.lower() not in low:
            problems.append(f"it drops the {e!r} the task acts on")
    # a value that is a word of the task's vocabulary (a file whose content is "email") tells
    # nothing: the objective must be free to name the entity
    vocab = {e.lower() for e in required_entities(graph, bundles)}
    vocab |= {_words(i.name).lower() for n in graph.nodes for i in n.inputs}
    vocab |= {_words(f).lower() for e in graph.edges for f in e.fields}
    for v in sorted(forbidden_values(graph)):
        if v.lower() in vocab:
            continue
        if re.search(rf"(?<![a-z0-9]){re.escape(v.lower())}(?![a-z0-9])", low):
            problems.append(f"it states {v!r}, which a partial view withholds")
    return problems


def _created_outputs(node: TaskNode, bundles: dict[str, BundleView]) -> set[str]:
    """Outputs `node` binds from a create call: values that did not exist before it ran."""
    b = bundles.get(node.task.mcp)
    return {
        name
        for call in node.task.reference_calls
        if b is not None and (c := b.contract(call.tool)) is not None and c.operation == "create"
        for name in call.bind
    }


def write_objective(graph: TaskGraph, bundles: dict[str, BundleView]) -> str:
    """The objective by rules: the shared object, then each node's effect in dependency order
    with the MCP it happens in and the values it takes from another MCP."""
    order = graph.order or [n.id for n in graph.nodes]
    by_id = {n.id: n for n in graph.nodes}
    position = {nid: k for k, nid in enumerate(order)}
    clauses: list[str] = []
    for nid in order:
        node = by_id[nid]
        text = f"{_clause(node, bundles)} in {_domain(node.task.mcp, bundles)}"
        flows = [
            (e.source, f)
            for e in graph.edges
            if e.target == nid
            and e.kind == EdgeKind.INFORMATION
            and e.source in by_id
            and by_id[e.source].task.mcp != node.task.mcp
            for f in e.fields
        ]
        if flows:
            src = min((x[0] for x in flows), key=lambda n: position.get(n, 0))
            fields = list(dict.fromkeys(_words(f) for n, f in flows if n == src))
            said = fields[0] if len(fields) == 1 else ", ".join(fields[:-1]) + " and " + fields[-1]
            # an id the source node's create made was created there, not found
            made = _created_outputs(by_id[src], bundles)
            how = "created" if all(f in made for n, f in flows if n == src) else "found"
            text += f" using the {said} {how} in {_domain(by_id[src].task.mcp, bundles)}"
        clauses.append(text)
    if len(clauses) == 1:
        steps = clauses[0]
    else:
        steps = "first " + ", then ".join(clauses[:-1]) + ", and finally " + clauses[-1]
    subject = ""
    safe = _stated_everywhere(graph) - forbidden_values(graph)
    for b in graph.bindings:
        value = next((str(v) for v in b.value.values() if str(v) in safe), None)
        kind = _words(b.entity)
        subject = f"For the {kind} {value}: " if value else f"For one {kind}: "
        break
    sentence = subject + steps
    return sentence[0].upper() + sentence[1:] + "."


class ObjectiveDraft(BaseModel):
    objective: str = Field(description="The business objective, in one or two sentences.")


_SYSTEM = (
    "You write the business objective of a multi-step task for the person who will do it. "
    "Say what must be achieved, step by step in the given order, naming every kind of record "
    "involved. Never name tools or functions, and never state a value you were not given."
)


def llm_objective(
    llm: BaseChatModel, graph: TaskGraph, bundles: dict[str, BundleView], *, attempts: int = 2
) -> tuple[str | None, list[str]]:
    """(objective, []) from the model, or (None, problems) when every attempt broke a rule.
    The model sees each step as a partial view states it, so it is never given what it must
    not state."""
    order = graph.order or [n.id for n in graph.nodes]
    by_id = {n.id: n for n in graph.nodes}
    steps = "\n".join(
        f"{k + 1}. {intent_text(by_id[nid], Disclosure.PARTIAL, graph.bindings)} "
        f"({_domain(by_id[nid].task.mcp, bundles)})"
        for k, nid in enumerate(order)
    )
    base = (
        f"Steps, in order:\n{steps}\nRecords involved: {', '.join(required_entities(graph, bundles))}\n"
        f"Write the objective."
    )
    problems: list[str] = []
    for _ in range(attempts):
        prompt = base + (
            "\nYour previous objective was rejected: " + "; ".join(problems) if problems else ""
        )
        try:
            draft = ask_structured(llm, ObjectiveDraft, prompt, system=_SYSTEM, what="objective")
        except ModelOutputError as exc:
            problems = [f"objective output invalid: {exc}"]
            continue
        problems = objective_problems(draft.objective, graph, bundles)
        if not problems:
            return draft.objective.strip(), []
    return None, problems
