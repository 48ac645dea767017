"""Lifecycle-aware ordering: which node effects on one object contradict each other.

A node's effects are read from its completion conditions, never from tool names: a
`field_equals` condition is a value the node sets on one row (an update, or a transition such as
approve -> status "approved"), a `row_absent` condition is a delete. Two nodes of one task
contradict each other when a later one undoes what an earlier one achieved on the same object:

- **reversal**: both set a lifecycle field (one the MCP's contracts declare transitions for) to
  different values, and the transition graph does not make the later value a one-way step from
  the earlier one (approve then reject, ship then cancel, freeze then unfreeze). A step is one-way
  when the graph has the edge earlier -> later and no path back;
- **overwrite**: both set an ordinary field of the same row to different values;
- **undone**: a later node deletes a row an earlier node changed, or acts on a row an earlier
  node deleted;
- **repeated**: a later node applies the transition an earlier node already applied to the same
  object (close a ticket twice) although the lifecycle has no step from that value to itself;
- **stale**: a later node was certified against a row (its task's seed rows) that an earlier node
  deleted, or against a value of that row an earlier node changed and the later node depends on:
  it filters on it, names the row by it, or expects to report it (list the open tickets and report
  a ticket an earlier node closed; read a customer an earlier node deleted).

Rows are identified by the condition's `where` with entity-binding references resolved, so two
nodes naming the same object by the bound value and by its literal value meet.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from weft_core.models import (
    FieldEquals,
    ReturnContains,
    RowAbsent,
    TaskGraph,
    TaskNode,
    ToolContract,
)

ContradictionKind = Literal["reversal", "overwrite", "undone", "repeated", "stale"]


@dataclass(frozen=True)
class Effect:
    """One change a node asks for: `field` of the row `row` of `table` set to `value`, or the
    row deleted (`field` None)."""

    node: str
    mcp: str
    table: str
    row: str
    field: str | None
    value: Any


@dataclass(frozen=True)
class Contradiction:
    kind: ContradictionKind
    first: Effect
    second: Effect

    @property
    def message(self) -> str:
        what = f"{self.first.mcp}.{self.first.table} {self.first.row}"
        if self.kind == "reversal":
            return (
                f"{self.second.node} sets {self.second.field}={self.second.value!r} on {what} "
                f"after {self.first.node} set it to {self.first.value!r}"
            )
        if self.kind == "overwrite":
            return (
                f"{self.second.node} overwrites {self.first.field} of {what} that "
                f"{self.first.node} set to {self.first.value!r}"
            )
        if self.kind == "repeated":
            return (
                f"{self.second.node} sets {self.second.field}={self.second.value!r} on {what} "
                f"again after {self.first.node} did: no transition leads from {self.first.value!r} "
                "to itself"
            )
        if self.kind == "stale":
            if self.first.field is None:
                return f"{self.second.node} needs {what}, which {self.first.node} deleted before it"
            return (
                f"{self.second.node} needs {self.first.field}={self.second.value!r} of {what}, "
                f"which {self.first.node} set to {self.first.value!r} before it"
            )
        return f"{self.second.node} undoes {self.first.node}'s change to {what}"


def _resolve(value: Any, bindings: Mapping[str, Any]) -> Any:
    if isinstance(value, dict) and set(value) == {"$binding"}:
        return bindings.get(str(value["$binding"]), value)
    return value


def node_effects(node: TaskNode, bindings: Mapping[str, Any] | None = None) -> list[Effect]:
    """The changes `node`'s completion conditions require (`bindings`: 'name.key' -> value)."""
    b = bindings or {}
    out: list[Effect] = []
    for c in node.checks:
        if isinstance(c, (FieldEquals, RowAbsent)) and c.where:
            where = {k: _resolve(v, b) for k, v in c.where.items()}
            row = json.dumps(where, sort_keys=True, default=str)
            mcp = c.mcp or node.task.mcp
            if isinstance(c, FieldEquals):
                if c.op != "eq":
                    continue  # a bound (balance >= 10) is a condition, not a value set
                out.append(Effect(node.id, mcp, c.table, row, c.field, _resolve(c.value, b)))
            else:
                out.append(Effect(node.id, mcp, c.table, row, None, None))
    return out


class TransitionGraph:
    """Per (table, field): which values a declared transition leads from and to."""

    def __init__(self, contracts: Mapping[str, list[ToolContract]]) -> None:
        self.edges: dict[tuple[str, str, str], dict[str, set[str]]] = {}
        for mcp, cs in contracts.items():
            for c in cs:
                for t in c.transitions:
                    if t.to_value is None:
                        continue
                    succ = self.edges.setdefault((mcp, t.entity, t.field), {})
                    for v in t.from_values:
                        succ.setdefault(str(v), set()).add(str(t.to_value))
                    succ.setdefault(str(t.to_value), set())

    def lifecycle(self, mcp: str, table: str, field: str) -> bool:
        return (mcp, table, field) in self.edges

    def _reaches(self, succ: dict[str, set[str]], a: str, b: str) -> bool:
        seen, todo = {a}, [a]
        while todo:
            for n in succ.get(todo.pop(), set()):
                if n == b:
                    return True
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return False

    def loops(self, mcp: str, table: str, field: str, value: str) -> bool:
        """Whether a declared transition may apply again to an object already at `value`."""
        return value in self.edges.get((mcp, table, field), {}).get(value, set())

    def one_way(self, mcp: str, table: str, field: str, earlier: str, later: str) -> bool:
        """Whether `earlier -> later` is a declared step the lifecycle never walks back."""
        succ = self.edges.get((mcp, table, field), {})
        return later in succ.get(earlier, set()) and not self._reaches(succ, later, earlier)


def contradictions(graph: TaskGraph, transitions: TransitionGraph) -> list[Contradiction]:
    """Every pair of node effects, in the graph's order, where the later undoes the earlier."""
    values = {f"{b.name}.{k}": v for b in graph.bindings for k, v in b.value.items()}
    order = graph.order or [n.id for n in graph.nodes]
    by_id = {n.id: n for n in graph.nodes}
    seen: list[Effect] = []
    out: list[Contradiction] = []
    for nid in order:
        mine = node_effects(by_id[nid], values)
        for e in mine:
            for p in seen:
                if (p.mcp, p.table, p.row) != (e.mcp, e.table, e.row):
                    continue
                if p.field is None or e.field is None:
                    out.append(Contradiction("undone", p, e))
                elif p.field == e.field and p.value != e.value:
                    if not transitions.lifecycle(e.mcp, e.table, e.field):
                        out.append(Contradiction("overwrite", p, e))
                    elif not transitions.one_way(
                        e.mcp, e.table, e.field, str(p.value), str(e.value)
                    ):
                        out.append(Contradiction("reversal", p, e))
                elif (
                    p.field == e.field
                    and transitions.lifecycle(e.mcp, e.table, e.field)
                    and not transitions.loops(e.mcp, e.table, e.field, str(e.value))
                ):
                    out.append(Contradiction("repeated", p, e))
        # a node that undoes an earlier one is reported once, as that
        if not any(c.second.node == nid for c in out):
            out.extend(_stale(by_id[nid], seen, values, by_id))
        seen.extend(mine)
    return out


def _matches(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    return bool(where) and all(
        k in row and (row[k] == v or str(row[k]) == str(v)) for k, v in where.items()
    )


def _depends_on(node: TaskNode, field: str, value: Any) -> bool:
    """Whether `node` relies on its row still having `field` = `value`: an input of that name
    and value (a filter or the row's name), a check that names the row by it, or an answer
    expected to show it."""
    if value is None:
        return False
    same = str(value)
    if any(i.name == field and str(i.value) == same for i in node.inputs):
        return True
    for c in node.checks:
        where = getattr(c, "where", None)
        if isinstance(where, Mapping) and str(where.get(field, object())) == same:
            return True
        if isinstance(c, ReturnContains) and str(c.value) == same:
            return True
    return False


def _stale(
    node: TaskNode,
    earlier: list[Effect],
    bindings: Mapping[str, Any],
    nodes: Mapping[str, TaskNode],
) -> list[Contradiction]:
    """Earlier effects that removed or changed what `node`'s task was certified against.
    MCPs are compared by task, since a stored graph's checks name the MegaMCP id instead."""
    out: list[Contradiction] = []
    for table, rows in node.task.seed_rows.items():
        for row in rows:
            resolved = {k: _resolve(v, bindings) for k, v in row.items()}
            for p in earlier:
                if nodes[p.node].task.mcp != node.task.mcp or p.table != table:
                    continue
                if not _matches(resolved, json.loads(p.row)):
                    continue
                if p.field is None:
                    need = Effect(node.id, p.mcp, table, p.row, None, None)
                    out.append(Contradiction("stale", p, need))
                    return out
                old = resolved.get(p.field)
                if old is not None and str(old) != str(p.value) and _depends_on(node, p.field, old):
                    need = Effect(node.id, p.mcp, table, p.row, p.field, old)
                    out.append(Contradiction("stale", p, need))
                    return out
    return out
