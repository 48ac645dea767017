"""The state-initialization agent: progressive state grounding in three rounds (paper §3.1.2).

    entities -> relations -> context -> END        (each round followed by schema checks)

(i) entity initialization puts in the target entities the graph's tasks act on (their fixture
rows, re-grounded on the graph's entity bindings) and the rows they reference: the minimal
executable state. (ii) relation completion adds the rows related to the targets: records that
reference them and records of the same business object through its shared key (a customer's
invoices). (iii) context enrichment adds historical records and distractors: other rows that do
not impersonate a bound object, and new near-duplicates of the target rows (another customer
"Alice J. Haddad" beside "Alice Haddad"; `weft_tasks.grounding.distractors`). Target rows are protected: a later round (or a model) may never
replace them, so entity correspondence and completion conditions are kept. The checks of the
graph are never touched by grounding.

A chat model, when given, proposes extra rows in every round; they pass the same schema checks
and protection, so a wrong proposal is dropped with its reason.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer
from pydantic import BaseModel, Field

from weft_core.exceptions import ModelOutputError
from weft_core.llm import ask_structured
from weft_core.models import TaskGraph
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.grounding.distractors import near_duplicate
from weft_tasks.grounding.identity import link_key
from weft_tasks.grounding.schema import Rows, check_rows

ROUNDS = ("entities", "relations", "context")


class GroundingState(BaseModel):
    graph: TaskGraph
    distractors: int = 3
    rounds: list[dict[str, Rows]] = Field(
        default_factory=list, description="Rows each round added, per MCP: rounds[i][mcp][table]."
    )
    issues: Annotated[list[str], operator.add] = Field(
        default_factory=list, description="What each round could not ground (appended to)."
    )
    failed: str | None = Field(default=None, description="Why the state cannot be grounded.")

    def rows(self, upto: int | None = None) -> dict[str, Rows]:
        """Cumulative rows per MCP after round `upto` (all rounds by default)."""
        out: dict[str, Rows] = {}
        for added in self.rounds[: upto if upto is not None else len(self.rounds)]:
            for mcp, tables in added.items():
                for table, rows in tables.items():
                    out.setdefault(mcp, {}).setdefault(table, []).extend(rows)
        return out


def _key(bundle: BundleView, table: str) -> str:
    try:
        return bundle.entities.entity(table).key
    except KeyError:
        return "id"


def _present(
    state_rows: dict[str, Rows], mcp: str, table: str, key: str
) -> dict[Any, dict[str, Any]]:
    return {r.get(key): r for r in state_rows.get(mcp, {}).get(table, [])}


def _with_parents(
    bundle: BundleView, table: str, row: dict[str, Any], have: set[tuple[str, Any]], out: Rows
) -> None:
    """Add `row` and, recursively, the seed rows it references, unless already present."""
    key = _key(bundle, table)
    if (table, row.get(key)) in have:
        return
    have.add((table, row.get(key)))
    out.setdefault(table, []).append(dict(row))
    try:
        entity = bundle.entities.entity(table)
    except KeyError:
        return
    for f in entity.fields:
        if f.foreign_key and row.get(f.name) is not None:
            ptable, _, pfield = f.foreign_key.partition(".")
            pfield = pfield or _key(bundle, ptable)
            parent = next((r for r in bundle.rows(ptable) if r.get(pfield) == row[f.name]), None)
            if parent is not None:
                _with_parents(bundle, ptable, parent, have, out)


def _bound_values(graph: TaskGraph) -> set[str]:
    return {v for b in graph.bindings for v in b.value.values() if isinstance(v, str)}


def _accept(
    state: GroundingState,
    bundles: dict[str, BundleView],
    proposed: dict[str, Rows],
    *,
    protect: bool,
) -> tuple[dict[str, Rows], list[str]]:
    """Schema-check proposed rows; with `protect`, drop rows that would replace a present row."""
    current = state.rows()
    accepted: dict[str, Rows] = {}
    issues: list[str] = []
    for mcp, tables in proposed.items():
        bundle = bundles.get(mcp)
        if bundle is None:
            issues.append(f"{mcp}: not an MCP of this graph")
            continue
        ok, bad = check_rows(mcp, bundle.entities, tables)
        issues += [f"{i.mcp}.{i.table}: {i.message}" for i in bad]
        for table, rows in ok.items():
            key = _key(bundle, table)
            present = _present(current, mcp, table, key)
            holder = _unique_holders(bundle, table, present.values(), key)
            for row in rows:
                k = row.get(key)
                if protect and k is not None and k in present:
                    if present[k] != row:
                        issues.append(
                            f"{mcp}.{table}: row {key}={k!r} would replace a target entity"
                        )
                    continue
                mine = _unique_holders(bundle, table, [row], key)
                clash = next((uv for uv in mine if holder.get(uv, k) != k), None)
                if clash is not None:
                    # the initial DB could not hold both rows: one node's object would be
                    # missing and every replay of the task would fail on it
                    u, v = clash
                    issues.append(
                        f"{mcp}.{table}: row {key}={k!r} has {u}={v!r}, unique and already "
                        f"held by {key}={holder[clash]!r}"
                    )
                    continue
                accepted.setdefault(mcp, {}).setdefault(table, []).append(row)
                present[k] = row
                holder.update(mine)
    return accepted, issues


def _unique_holders(
    bundle: BundleView, table: str, rows: Iterable[dict[str, Any]], key: str
) -> dict[tuple[str, Any], Any]:
    """(unique field, value) -> key of the row holding it."""
    try:
        uniques = [f.name for f in bundle.entities.entity(table).fields if f.unique]
    except KeyError:
        return {}
    return {(u, r[u]): r.get(key) for r in rows for u in uniques if r.get(u) is not None}


def entities_round(state: GroundingState, *, bundles: dict[str, BundleView]) -> dict[str, Any]:
    """(i) target entities and the minimal executable state: the tasks' fixture rows, re-grounded
    on the bindings by composition, with the rows they reference."""
    added: dict[str, Rows] = {}
    issues: list[str] = []
    have: dict[str, set[tuple[str, Any]]] = {}
    targets: dict[tuple[str, str, Any], dict[str, Any]] = {}
    bound = _bound_values(state.graph)
    for node in state.graph.nodes:
        bundle = bundles[node.task.mcp]
        for table, rows in node.task.seed_rows.items():
            key = _key(bundle, table)
            for row in rows:
                slot = (node.task.mcp, table, row.get(key))
                if slot in targets and targets[slot] != row:
                    # the same object seen by two nodes: the one re-grounded on a binding wins
                    # (the replay then shows whether the other node still holds)
                    mine = sum(1 for v in row.values() if isinstance(v, str) and v in bound)
                    theirs = sum(
                        1 for v in targets[slot].values() if isinstance(v, str) and v in bound
                    )
                    if mine == theirs:
                        return {
                            "failed": f"{node.id}: target {table} {key}={row.get(key)!r} conflicts with another node's",
                            "rounds": [added],
                        }
                    if mine < theirs:
                        continue
                targets[slot] = row
                _with_parents(
                    bundle,
                    table,
                    row,
                    have.setdefault(node.task.mcp, set()),
                    added.setdefault(node.task.mcp, {}),
                )
    # a fixture row wins over the same row reached as someone's parent (it may be re-grounded)
    for mcp, tables in added.items():
        key_of = {t: _key(bundles[mcp], t) for t in tables}
        for table, rows in tables.items():
            tables[table] = [targets.get((mcp, table, r.get(key_of[table])), r) for r in rows]
    for mcp in {n.task.mcp for n in state.graph.nodes}:
        added.setdefault(mcp, {})
    ok, bad = _accept(GroundingState(graph=state.graph), bundles, added, protect=False)
    issues += bad
    if bad:
        return {
            "failed": "target entities fail the schema: " + "; ".join(bad[:3]),
            "rounds": [ok],
            "issues": issues,
        }
    for mcp in added:
        ok.setdefault(mcp, {})
    return {"rounds": [ok], "issues": issues}


def relations_round(
    state: GroundingState, *, bundles: dict[str, BundleView], per_target: int = 3
) -> dict[str, Any]:
    """(ii) rows related to the targets: records referencing them, and records carrying a bound
    object's shared key (its history in this MCP)."""
    current = state.rows()
    bound = _bound_values(state.graph)
    proposed: dict[str, Rows] = {}
    for mcp, bundle in bundles.items():
        have = {
            (t, r.get(_key(bundle, t))) for t, rows in current.get(mcp, {}).items() for r in rows
        }
        out: Rows = {}
        targets = {
            (t, r.get(_key(bundle, t))) for t, rows in current.get(mcp, {}).items() for r in rows
        }
        for entity in bundle.entities.entities:
            taken = 0
            for row in bundle.rows(entity.name):
                if taken >= per_target * max(1, len(targets)):
                    break
                refs_target = any(
                    f.foreign_key and (f.foreign_key.split(".")[0], row.get(f.name)) in targets
                    for f in entity.fields
                )
                shares_key = any(
                    link_key(entity, f.name)
                    and isinstance(row.get(f.name), str)
                    and row[f.name] in bound
                    for f in entity.fields
                )
                if (refs_target or shares_key) and (entity.name, row.get(entity.key)) not in have:
                    _with_parents(bundle, entity.name, row, have, out)
                    taken += 1
        proposed[mcp] = out
    accepted, issues = _accept(state, bundles, proposed, protect=True)
    return {"rounds": [*state.rounds, accepted], "issues": issues}


def context_round(state: GroundingState, *, bundles: dict[str, BundleView]) -> dict[str, Any]:
    """(iii) historical records and distractors: other seed rows that do not impersonate a bound
    object (no bound value in any of their fields) nor reuse a unique value already present."""
    current = state.rows()
    bound = _bound_values(state.graph)
    proposed: dict[str, Rows] = {}
    for mcp, bundle in bundles.items():
        have = {
            (t, r.get(_key(bundle, t))) for t, rows in current.get(mcp, {}).items() for r in rows
        }
        out: Rows = {}
        for entity in bundle.entities.entities:
            uniques = [f.name for f in entity.fields if f.unique]
            used = {
                (u, r.get(u)) for r in current.get(mcp, {}).get(entity.name, []) for u in uniques
            }
            n = 0
            for row in bundle.rows(entity.name):
                if n >= state.distractors:
                    break
                if (entity.name, row.get(entity.key)) in have:
                    continue
                if any(isinstance(v, str) and v in bound for v in row.values()):
                    continue
                if any((u, row.get(u)) in used for u in uniques):
                    continue
                _with_parents(bundle, entity.name, row, have, out)
                n += 1
            # near-duplicates of the rows the tasks act on: what a careless agent would pick
            targets = state.rounds[0].get(mcp, {}).get(entity.name, []) if state.rounds else []
            pool = [
                *bundle.rows(entity.name),
                *current.get(mcp, {}).get(entity.name, []),
                *out.get(entity.name, []),
            ]
            for salt, target in enumerate(targets[: state.distractors]):
                twin = near_duplicate(entity, target, pool, bound, salt)
                if twin is not None:
                    out.setdefault(entity.name, []).append(twin)
                    pool.append(twin)
        proposed[mcp] = out
    accepted, issues = _accept(state, bundles, proposed, protect=True)
    return {"rounds": [*state.rounds, accepted], "issues": issues}


class RowProposal(BaseModel):
    """Rows a model adds in one grounding round: {mcp: {table: [row, ...]}}."""

    rows: dict[str, dict[str, list[dict[str, Any]]]] = Field(default_factory=dict)


_GOALS = {
    "entities": "the target entities and the minimal state the tasks need",
    "relations": "related records and constraints around the target entities",
    "context": "historical records and realistic distractors that do not impersonate the targets",
}


def llm_round(
    state: GroundingState, *, bundles: dict[str, BundleView], llm: BaseChatModel, name: str
) -> dict[str, Any]:
    """Extra rows from the model for this round, kept only where they pass the checks."""
    schema = {
        m: b.entities.model_dump(mode="json", include={"entities"}) for m, b in bundles.items()
    }
    prompt = (
        f"Task objective: {state.graph.objective}\nRound: {name} - add {_GOALS[name]}.\n"
        f"Entity bindings: {[b.model_dump() for b in state.graph.bindings]}\n"
        f"Schemas: {schema}\nRows so far: {state.rows()}\n"
        "Never change an existing row. Answer with the rows to add."
    )
    try:
        proposal = ask_structured(
            llm,
            RowProposal,
            prompt,
            system="You build realistic initial database states.",
            what="row proposal",
        )
    except ModelOutputError as exc:
        return {"issues": [f"{name}: model proposal unusable: {exc}"]}
    accepted, issues = _accept(state, bundles, proposal.rows, protect=True)
    last = dict(state.rounds[-1]) if state.rounds else {}
    for mcp, tables in accepted.items():
        merged = {t: list(r) for t, r in last.get(mcp, {}).items()}
        for t, rows in tables.items():
            merged.setdefault(t, []).extend(rows)
        last[mcp] = merged
    rounds = [*state.rounds[:-1], last] if state.rounds else [last]
    return {"rounds": rounds, "issues": [f"{name} (model): {i}" for i in issues]}


def _stop_if_failed(state: GroundingState, *, nxt: str) -> str:
    return END if state.failed else nxt


@dataclass(frozen=True)
class GroundingContext:
    """What one grounding run depends on (LangGraph `context_schema`)."""

    bundles: dict[str, BundleView]
    llm: BaseChatModel | None = None


def _entities_node(state: GroundingState, runtime: Runtime[GroundingContext]) -> dict[str, Any]:
    return entities_round(state, bundles=runtime.context.bundles)


def _relations_node(state: GroundingState, runtime: Runtime[GroundingContext]) -> dict[str, Any]:
    return relations_round(state, bundles=runtime.context.bundles)


def _context_node(state: GroundingState, runtime: Runtime[GroundingContext]) -> dict[str, Any]:
    return context_round(state, bundles=runtime.context.bundles)


def _model_round(
    state: GroundingState, runtime: Runtime[GroundingContext], name: str
) -> dict[str, Any]:
    llm = runtime.context.llm
    if llm is None:  # a graph built with_model run without one: the round is skipped
        return {}
    return llm_round(state, bundles=runtime.context.bundles, llm=llm, name=name)


def _entities_model_node(
    state: GroundingState, runtime: Runtime[GroundingContext]
) -> dict[str, Any]:
    return _model_round(state, runtime, "entities")


def _relations_model_node(
    state: GroundingState, runtime: Runtime[GroundingContext]
) -> dict[str, Any]:
    return _model_round(state, runtime, "relations")


def _context_model_node(
    state: GroundingState, runtime: Runtime[GroundingContext]
) -> dict[str, Any]:
    return _model_round(state, runtime, "context")


def build_grounding_graph(
    *, with_model: bool = False, checkpointer: Checkpointer = None
) -> CompiledStateGraph[GroundingState, GroundingContext, GroundingState, GroundingState]:
    """Ground one task graph; invoke with `GroundingState(graph=...)` and
    `context=GroundingContext(bundles, llm)` (`bundles`: MCP -> bundle). `with_model` adds the
    LLM round after each programmatic round."""
    g = StateGraph(GroundingState, context_schema=GroundingContext)
    g.add_node("entities", _entities_node)
    g.add_node("relations", _relations_node)
    g.add_node("context", _context_node)
    if with_model:
        g.add_node("entities_model", _entities_model_node)
        g.add_node("relations_model", _relations_model_node)
        g.add_node("context_model", _context_model_node)
    prev = START
    for name in ("entities", "relations", "context"):
        last = name
        if with_model:
            g.add_edge(name, f"{name}_model")
            last = f"{name}_model"
        if prev is START:
            g.add_edge(START, name)
        else:
            g.add_conditional_edges(prev, partial(_stop_if_failed, nxt=name), [name, END])
        prev = last
    g.add_edge(prev, END)
    return g.compile(checkpointer=checkpointer)


@functools.cache
def _compiled(
    with_model: bool,
) -> CompiledStateGraph[GroundingState, GroundingContext, GroundingState, GroundingState]:
    return build_grounding_graph(with_model=with_model)


def ground(
    graph: TaskGraph,
    bundles: dict[str, BundleView],
    llm: BaseChatModel | None = None,
    *,
    distractors: int = 3,
) -> GroundingState:
    out = _compiled(llm is not None).invoke(
        GroundingState(graph=graph, distractors=distractors),
        context=GroundingContext(bundles, llm),
    )
    return GroundingState.model_validate(out)
