"""Ids created on one MCP and used on another (paper §3.1.2: upstream outcomes feed inputs).

A business files what it creates under references other systems keep: a payment names the
order it settles, an email the helpdesk ticket it answers, an order the CRM deal it fulfils.
In a contract such a reference is a plain text field named after the object it refers to
(`order_ref`, `ticket_reference`): not a foreign key, since the object lives in another
service's database. A task that creates an object on one MCP (its create call binds the new
row's key) can feed a later task on another MCP that sets a reference to an object of that kind.

The id does not exist until the create runs, so composition cannot value it: the downstream
input is marked upstream and given a placeholder (`<new ticket id from n2>`), which its checks
and intent carry. The reference replay then runs the create, and `settle` puts the id it
returned in place of the placeholder everywhere; the replay that follows verifies the downstream
row holds exactly the id created upstream. Ids are deterministic for a given initial state
(MegaMCP replays from content-addressed snapshots), so a rollout from the same snapshot creates
the same id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from weft_core.models import AtomicTask, EdgeKind, TaskEdge, TaskGraph, TaskInput
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.compose.flows import Flow, Found, carry

_REF = re.compile(r"^(?P<entity>[a-z][a-z0-9]*(?:_[a-z0-9]+)*?)_(?:ref|reference)$")
_PLACEHOLDER = re.compile(r"<new [a-z0-9_]+ id from n\d+>")


@dataclass(frozen=True)
class Created:
    """An id a node's create call returns: node index, output name, entity of the new row."""

    node: int
    output: str
    entity: str

    @property
    def placeholder(self) -> str:
        return f"<new {self.entity} id from n{self.node + 1}>"


def is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and _PLACEHOLDER.fullmatch(value) is not None


def created_ids(task: AtomicTask, bundle: BundleView, node: int) -> list[Created]:
    """The keys of the rows `task`'s create calls make, as outputs it names."""
    out: list[Created] = []
    for call in task.reference_calls:
        c = bundle.contract(call.tool)
        if c is None or c.operation != "create" or not c.entity:
            continue
        try:
            entity = bundle.entities.entity(c.entity)
        except KeyError:
            continue
        for name, path in call.bind.items():
            if name in task.outputs and path.split(".")[-1] == entity.key:
                out.append(Created(node, name, entity.name))
    return out


def id_references(task: AtomicTask, bundle: BundleView) -> dict[str, str]:
    """`{input name: entity}` for inputs a write sets on a plain text field that refers to an
    object by name (`ticket_ref` -> ticket): no key, foreign key, enum or unique field."""
    out: dict[str, str] = {}
    for call in task.reference_calls:
        c = bundle.contract(call.tool)
        if c is None or c.operation not in ("create", "update", "action"):
            continue
        for m in c.mappings:
            arg = call.arguments.get(m.argument)
            if m.role != "value" or not isinstance(arg, str) or not arg.startswith("{{"):
                continue
            try:
                f = bundle.entities.entity(m.entity or c.entity or "").field(m.field or "")
            except KeyError:
                continue
            hit = _REF.match(f.name)
            if (
                hit
                and f.type == "string"
                and not (f.enum or f.unique or f.primary_key or f.foreign_key)
            ):
                out[arg.strip("{} ")] = hit.group("entity")
    return out


def pick_created(
    task: AtomicTask,
    inputs: list[TaskInput],
    bundle: BundleView,
    earlier: list[tuple[str, list[Created]]],
    used: Collection[tuple[int, str]] = (),
) -> tuple[str, Created] | None:
    """The one given input of `task` that refers to an object of a kind an earlier node on
    another MCP created (nearest node first), with that creation; `earlier` is (MCP, creations)
    per earlier node."""
    given = {i.name for i in inputs if i.source == "given"}
    for name, entity in id_references(task, bundle).items():
        if name not in given:
            continue
        for mcp, made in reversed(earlier):
            if mcp == task.mcp:
                continue
            for c in made:
                if c.entity == entity and (c.node, c.output) not in used:
                    return name, c
    return None


def file_created(
    task: AtomicTask, inputs: list[TaskInput], node_id: str, name: str, new: Created
) -> tuple[AtomicTask, list[TaskInput], TaskEdge]:
    """`task` (node `node_id`) with input `name` filing the id `new` will return: the input
    upstream of the create with the placeholder as its value, the placeholder in the task's
    checks and intent, and the information edge that carries the id."""
    src_id = f"n{new.node + 1}"
    task = carry(task, Flow(name, Found(new.node, new.output, name, new.placeholder)))
    upstream = {
        "value": new.placeholder,
        "source": "upstream",
        "from_node": src_id,
        "from_output": new.output,
    }
    inputs = [i.model_copy(update=upstream) if i.name == name else i for i in inputs]
    edge = TaskEdge(source=src_id, target=node_id, kind=EdgeKind.INFORMATION, fields=[new.output])
    return task, inputs, edge


def settle(graph: TaskGraph, outputs: Mapping[str, Mapping[str, Any]]) -> TaskGraph:
    """`graph` with each placeholder of an upstream-created id replaced by the id the replay's
    node returned (`outputs`: node -> output -> value); the same graph when none is known."""
    renames: dict[str, str] = {}
    for n in graph.nodes:
        for i in n.inputs:
            if i.source != "upstream" or not is_placeholder(i.value):
                continue
            value = outputs.get(i.from_node or "", {}).get(i.from_output or "")
            if isinstance(value, str | int) and not isinstance(value, bool):
                renames[str(i.value)] = str(value)
    if not renames:
        return graph
    text = graph.model_dump_json(by_alias=True)
    for old, new in renames.items():
        text = text.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1])
    return TaskGraph.model_validate_json(text)


def probe_prefix(graph: TaskGraph) -> TaskGraph:
    """`graph` run only up to the last node whose created id a placeholder waits for: what a
    probe needs to run (creates come early, so this is usually a short prefix)."""
    sources = {
        i.from_node
        for n in graph.nodes
        for i in n.inputs
        if i.source == "upstream" and is_placeholder(i.value)
    }
    last = max((k for k, nid in enumerate(graph.order) if nid in sources), default=-1)
    return graph.model_copy(update={"order": graph.order[: last + 1]})


def unsettled(graph: TaskGraph) -> list[str]:
    """Placeholders still in the graph's inputs (a graph with any is not finished)."""
    return [
        str(i.value)
        for n in graph.nodes
        for i in n.inputs
        if i.source == "upstream" and is_placeholder(i.value)
    ]
