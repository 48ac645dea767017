"""Agentic mode: one complete brief for autonomous planning (paper §3.1.3 (i))."""

from __future__ import annotations

from weft_core.models import Disclosure, TaskGraph, TaskView, ViewMode
from weft_tasks.views._order import disclosure_order
from weft_tasks.views.disclosure import disclose_inputs, intent_text


def render_brief(graph: TaskGraph, disclosure: Disclosure = Disclosure.FULL) -> str:
    """The whole task as one message: objective, every step in dependency order with its inputs
    at this disclosure level, what each step depends on, and what to report back."""
    disclosure = Disclosure(disclosure)
    order = disclosure_order(graph)
    intents = {n.id: n.intent for n in graph.nodes}
    position = {node_id: i + 1 for i, node_id in enumerate(order)}
    lines = [f"Objective: {graph.objective}", "", "Complete all of the following:"]
    for node_id in order:
        node = graph.node(node_id)
        lines.append(f"{position[node_id]}. {intent_text(node, disclosure, graph.bindings)}")
        for item in disclose_inputs(node, disclosure, graph.bindings, intents):
            lines.append(f"   - {item.text}")
        deps = sorted(
            {e.source for e in graph.edges if e.target == node_id}
            | {i.from_node for i in node.inputs if i.source == "upstream" and i.from_node},
            key=lambda n: position.get(n, 0),
        )
        if deps:
            lines.append("   - after step(s) " + ", ".join(str(position[d]) for d in deps))
        if node.outcomes:
            lines.append("   - report: " + "; ".join(node.outcomes.values()))
    lines += ["", "Use the available tools; reply with a short summary when everything is done."]
    return "\n".join(lines)


def build_agentic_view(graph: TaskGraph, disclosure: Disclosure = Disclosure.FULL) -> TaskView:
    return TaskView(
        mode=ViewMode.AGENTIC, disclosure=disclosure, brief=render_brief(graph, disclosure)
    )
