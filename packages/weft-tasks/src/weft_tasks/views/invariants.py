"""What a view may never change: objectives, dependencies, initial state, completion conditions
and MCP interfaces (paper §3.1.3). Views are built from a graph without copying or editing these
parts; `task_invariants` names them so tests and the rollout runner can prove it."""

from __future__ import annotations

from typing import Any

from weft_core._hashing import content_hash
from weft_core.models import TaskGraph


def task_invariants(graph: TaskGraph) -> dict[str, Any]:
    """The view-independent content of a task, as JSON-able data."""
    return {
        "objective": graph.objective,
        "nodes": [
            {
                "id": n.id,
                "mcp": n.task.mcp,
                "intent": n.intent,
                "inputs": [i.model_dump(mode="json", by_alias=True) for i in n.inputs],
                "outcomes": n.outcomes,
                "checks": [c.model_dump(mode="json") for c in n.checks],
                "tool_chain": n.task.tool_chain,
            }
            for n in graph.nodes
        ],
        "edges": [e.model_dump(mode="json") for e in graph.edges],
        "bindings": [b.model_dump(mode="json") for b in graph.bindings],
        "initial_snapshots": {
            k: v.model_dump(mode="json") for k, v in graph.initial_snapshots.items()
        },
        "final_checks": [c.model_dump(mode="json") for c in graph.final_checks],
        "mcps": graph.mcps,
    }


def invariants_hash(graph: TaskGraph) -> str:
    return content_hash(task_invariants(graph))
