"""The composition agent: selected atomic tasks -> a grounded task graph (paper §3.1.2).

    propose -> check --(issues, attempts left)--> propose
                     \\-> END

`propose` (programmatic, or a chat model) picks k of the candidate tasks, binds the business
object they share across MCPs, aligns each task's inputs and fixture rows to it, marks inputs
given / retrieved / upstream and draws information and state edges. `check` runs the
deterministic graph checks; a model sees the issues and tries again, the programmatic strategy
is deterministic so its issues are final. The graph's order is the stable topological order.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer
from pydantic import BaseModel, Field, TypeAdapter

from weft_core.exceptions import ModelOutputError
from weft_core.llm import ask_structured
from weft_core.models import (
    AllowedChange,
    AtomicTask,
    Check,
    EdgeKind,
    EntityBinding,
    NoOtherChanges,
    TaskEdge,
    TaskGraph,
    TaskInput,
    TaskNode,
)
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.atomic.execution import render, render_checks
from weft_tasks.compose.align import align_task, binding_key, entity_of, is_unique, share_renames
from weft_tasks.compose.created import (
    Created,
    created_ids,
    file_created,
    pick_created,
)
from weft_tasks.compose.dag_checks import BINDING_KEY, GraphIssue, check_graph, stable_order
from weft_tasks.compose.flows import (
    Found,
    carry,
    link_references,
    pick_flow,
    reported_ids,
    reported_values,
    writable_text,
)
from weft_tasks.compose.lifecycle import TransitionGraph, contradictions
from weft_tasks.compose.links import input_fields, link_fields, output_fields
from weft_tasks.compose.selection import (
    FlowIndex,
    execution_order,
    pick,
    with_created_reference,
    with_information_edge,
)
from weft_tasks.compose.staleness import still_reports

_CHECKS: TypeAdapter[list[Check]] = TypeAdapter(list[Check])
_OP_RANK = {
    "read": 0,
    "search": 0,
    "list": 0,
    "file_read": 0,
    "file_list": 0,
    "compute": 0,
    "create": 1,
    "file_write": 1,
    "update": 2,
    "action": 2,
    "delete": 3,
    "file_delete": 3,
}


class CompositionState(BaseModel):
    graph_id: str
    profile: str
    objective: str
    nodes_wanted: int = Field(ge=1)
    pool: list[AtomicTask]
    graph: TaskGraph | None = None
    issues: list[GraphIssue] = Field(default_factory=list)
    attempts: int = 0
    max_attempts: int = 2
    retryable: bool = Field(
        default=False, description="Whether a rejected proposal is worth proposing again."
    )


@dataclass(frozen=True)
class CompositionContext:
    """What one composition depends on (LangGraph `context_schema`)."""

    bundles: dict[str, BundleView]
    llm: BaseChatModel | None = None


# ----------------------------------------------------------------------------- helpers


def _op(task: AtomicTask, bundle: BundleView) -> str:
    c = bundle.contract(task.tool_chain[-1]) if task.tool_chain else None
    return c.operation if c else "compute"


def choose_binding(pool: list[AtomicTask], bundles: dict[str, BundleView]) -> EntityBinding | None:
    """The business object most MCPs of the pool share, valued from a real fixture row of an
    MCP where the object's key is unique; refs list that home MCP first."""
    refs_by_key: dict[str, dict[str, str]] = {}
    for m, b in bundles.items():
        for f in link_fields(b):
            short = f.key.split(".")[-1]
            cur = refs_by_key.setdefault(short, {})
            if m not in cur or is_unique(b, f.entity, f.field):
                cur[m] = f.entity
    keys = sorted(
        (k for k, r in refs_by_key.items() if len(r) >= 2), key=lambda k: (-len(refs_by_key[k]), k)
    )

    def reads_out(task: AtomicTask) -> int:
        # a task that reports the object's other keys lets later tasks use what it found
        b = bundles.get(task.mcp)
        return len(output_fields(task, b)) if b is not None else 0

    def finds(task: AtomicTask) -> int:
        # a read of a real row names the objects it references (the ticket's customer): valued
        # from there, the bound object is one the agent finds rather than one the user names
        b = bundles.get(task.mcp)
        return len(reported_ids(task, b, 0)) if b is not None else 0

    readers_first = sorted(pool, key=lambda t: (-min(finds(t), 1), -min(reads_out(t), 1)))
    for key in keys:
        refs = refs_by_key[key]
        for task in readers_first:
            home = bundles.get(task.mcp)
            table = refs.get(task.mcp)
            if home is None or table is None or not task.seed_rows.get(table):
                continue
            e = entity_of(home, table)
            if e is None:
                continue
            row = task.seed_rows[table][0]
            value: dict[str, Any] = {}
            for ef in e.fields:
                k = binding_key(home, table, ef.name)
                if k and row.get(ef.name) is not None and (k == "name" or k in refs_by_key):
                    value.setdefault(k, row[ef.name])
            anchor = [ef for ef in e.fields if binding_key(home, table, ef.name) == key]
            if key not in value or not anchor or not is_unique(home, table, anchor[0].name):
                continue
            ordered = {task.mcp: table} | {m: t for m, t in sorted(refs.items()) if m != task.mcp}
            return EntityBinding(name=table, entity=table, value=value, refs=ordered)
    return None


def node_checks(
    node_id: str, task: AtomicTask, values: dict[str, Any], binding: EntityBinding | None
) -> list[Check]:
    """The task's completion conditions, instantiated for this node: inputs filled, values of the
    bound object turned into binding references, evidence pinned to the node's MCP."""
    checks = render_checks(task.checks, values)
    dumped = _CHECKS.dump_python(checks, mode="json")
    reverse = (
        {
            v: {"$binding": f"{binding.name}.{k}"}
            for k, v in binding.value.items()
            if isinstance(v, str)
        }
        if binding
        else {}
    )
    out = []
    for i, c in enumerate(dumped):
        c["id"] = f"{node_id}.c{i + 1}"
        c["mcp"] = task.mcp
        for part in ("where", "arguments"):
            if isinstance(c.get(part), dict):
                c[part] = {
                    k: reverse.get(v, v) if isinstance(v, str) else v for k, v in c[part].items()
                }
        if c.get("kind") in ("field_equals", "return_contains") and isinstance(c.get("value"), str):
            c["value"] = reverse.get(c["value"], c["value"])
        out.append(c)
    return _CHECKS.validate_python(out)


def assemble(
    state: CompositionState,
    chosen: list[AtomicTask],
    bundles: dict[str, BundleView],
    binding: EntityBinding | None,
    sources: dict[tuple[int, str], tuple[int, str]] | None = None,
) -> TaskGraph:
    """Nodes, edges and bindings for `chosen` (already in execution order). `sources` forces
    upstream sources (LLM strategy); otherwise aligned inputs are wired to the nearest earlier
    node that outputs the same field of the bound object."""
    anchors: dict[str, Any] = {}
    if binding is not None:
        for t in chosen:
            table = binding.refs.get(t.mcp)
            rows = t.seed_rows.get(table or "", [])
            ent = entity_of(bundles[t.mcp], table or "")
            if rows and ent is not None and t.mcp == _home(binding, chosen, bundles):
                anchors.setdefault(f"{t.mcp}.{table}", rows[0].get(ent.key))
    nodes: list[TaskNode] = []
    edges: list[TaskEdge] = []
    outputs_of: list[dict[str, str]] = []  # per node: output name -> binding key it carries
    # Binding keys the user has stated so far. The user names the bound object once (by the
    # key the first node that needs it uses); every other attribute of it a later node needs is
    # what an earlier node found (the customer id found in the CRM feeds the order), so values
    # flow between tasks instead of being handed over again.
    user_given: set[str] = set()
    reports: list[tuple[str, list[Found]]] = []  # per node: (MCP, values it reports)
    used_flows: set[tuple[int, str]] = set()
    id_reports: list[tuple[str, list[tuple[str, Found]]]] = []  # per node: keys it reports
    creations: list[tuple[str, list[Created]]] = []  # per node: ids its creates return
    aligned_tasks = share_renames(
        chosen,
        [align_task(raw, bundles[raw.mcp], binding, anchors) for raw in chosen],
        bundles,
        binding,
    )
    for idx, raw in enumerate(chosen):
        node_id = f"n{idx + 1}"
        bundle = bundles[raw.mcp]
        task, aligned = aligned_tasks[idx]
        fed: dict[str, Found] = {}
        if sources is None:
            task, fed = link_references(task, bundle, id_reports, set(aligned))
        values = {i.name: i.value for i in task.inputs}
        inputs: list[TaskInput] = []

        for i in task.inputs:
            schema = dict(i.schema_)
            upd: dict[str, Any] = {}
            if i.name in aligned:
                key = aligned[i.name].split(".")[1]
                schema[BINDING_KEY] = aligned[i.name]
                upd["schema_"] = schema
                src = None
                if sources is not None:
                    src = sources.get((idx, i.name))
                elif key not in user_given:
                    src = _nearest_source(outputs_of, idx, key)
                if src is not None and i.source == "given":
                    upd |= {
                        "source": "upstream",
                        "from_node": f"n{src[0] + 1}",
                        "from_output": src[1],
                    }
                    edges.append(
                        TaskEdge(
                            source=f"n{src[0] + 1}",
                            target=node_id,
                            kind=EdgeKind.INFORMATION,
                            fields=[src[1]],
                        )
                    )
                elif i.source == "given" and i.name in fed:
                    # an earlier node found the bound object's key: the user need not state it
                    i = _from_report(i, fed[i.name], node_id, edges)
                elif i.source == "given":
                    user_given.add(key)
            elif i.source == "given" and i.name in fed:
                i = _from_report(i, fed[i.name], node_id, edges)
            inputs.append(i.model_copy(update=upd) if upd else i)
        made = pick_created(task, inputs, bundle, creations) if sources is None else None
        if made is not None:
            task, inputs, edge = file_created(task, inputs, node_id, *made)
            values = {i.name: i.value for i in task.inputs}
            edges.append(edge)
        known = {str(v) for v in (binding.value.values() if binding else [])} | {
            str(i.value) for n in nodes for i in n.inputs if i.source == "given"
        }
        flow = (
            pick_flow(task, inputs, bundle, reports, used_flows, known) if sources is None else None
        )
        if flow is not None:
            task = carry(task, flow)
            values = {i.name: i.value for i in task.inputs}
            src_id = f"n{flow.source.node + 1}"
            inputs = [
                i.model_copy(
                    update={
                        "value": flow.source.value,
                        "source": "upstream",
                        "from_node": src_id,
                        "from_output": flow.source.output,
                    }
                )
                if i.name == flow.input
                else i
                for i in inputs
            ]
            edges.append(
                TaskEdge(
                    source=src_id,
                    target=node_id,
                    kind=EdgeKind.INFORMATION,
                    fields=[flow.source.output],
                )
            )
            used_flows.add((flow.source.node, flow.source.output))
        # what a read reports is valued from the initial row: a field an earlier node may have
        # changed on that row (or the row it deleted) may read otherwise, so it feeds nothing
        keep = still_reports(nodes, task.mcp, _binding_values(binding))
        reports.append((task.mcp, reported_values(task, bundle, idx, keep)))
        id_reports.append((task.mcp, reported_ids(task, bundle, idx, keep)))
        creations.append((task.mcp, created_ids(task, bundle, idx)))
        carried: dict[str, str] = {}
        # what a create returns is a new record, never the bound object
        created = {
            n
            for call in task.reference_calls
            if (c := bundle.contract(call.tool)) is not None and c.operation == "create"
            for n in call.bind
        }
        if binding is not None and binding.refs.get(task.mcp):
            for out_name, (entity, field) in output_fields(task, bundle).items():
                bkey = binding_key(bundle, entity, field)
                if out_name in created:
                    continue
                if entity == binding.refs[task.mcp] and bkey and bkey in binding.value and aligned:
                    carried[out_name] = bkey
        outputs_of.append(carried)
        nodes.append(
            TaskNode(
                id=node_id,
                task=task,
                intent=_intent(task, values, inputs),
                inputs=inputs,
                outcomes=dict(task.outputs),
                checks=node_checks(node_id, task, values, binding),
            )
        )
    # state dependencies: same MCP, overlapping entities, at least one side writes
    for j, b in enumerate(nodes):
        for a in nodes[:j]:
            if a.task.mcp != b.task.mcp or not (a.task.writes or b.task.writes):
                continue
            shared = set(a.task.entities) & set(b.task.entities)
            if (shared or not (a.task.entities or b.task.entities)) and not any(
                e.source == a.id and e.target == b.id for e in edges
            ):
                edges.append(TaskEdge(source=a.id, target=b.id, kind=EdgeKind.STATE))
    nodes = _accumulate_allowed(nodes)
    used = {n.task.mcp for n in nodes}
    bindings = []
    if binding is not None and len(used & set(binding.refs)) >= 1:
        bindings.append(
            binding.model_copy(
                update={"refs": {m: t for m, t in binding.refs.items() if m in used}}
            )
        )
    graph = TaskGraph(
        id=state.graph_id,
        objective=state.objective,
        profile=state.profile,
        nodes=nodes,
        edges=edges,
        bindings=bindings,
    )
    order = stable_order(graph)
    return graph.model_copy(update={"order": order or []})


def _binding_values(binding: EntityBinding | None) -> dict[str, Any]:
    """'name.key' -> value of the bound object, to read `$binding` references in conditions."""
    if binding is None:
        return {}
    return {f"{binding.name}.{k}": v for k, v in binding.value.items()}


def _from_report(i: TaskInput, f: Found, node_id: str, edges: list[TaskEdge]) -> TaskInput:
    """Input `i` of `node_id` valued by what node `f.node` reported, with its information edge."""
    edges.append(
        TaskEdge(
            source=f"n{f.node + 1}", target=node_id, kind=EdgeKind.INFORMATION, fields=[f.output]
        )
    )
    return i.model_copy(
        update={"source": "upstream", "from_node": f"n{f.node + 1}", "from_output": f.output}
    )


def _nearest_source(outputs_of: list[dict[str, str]], idx: int, key: str) -> tuple[int, str] | None:
    """The closest earlier node that outputs binding key `key`: (node index, output name)."""
    for j in range(idx - 1, -1, -1):
        out = next((o for o, k in outputs_of[j].items() if k == key), None)
        if out is not None:
            return j, out
    return None


def _intent(task: AtomicTask, values: dict[str, Any], inputs: list[TaskInput]) -> str:
    """The node's intent in words. A value that comes from an earlier step is not known to the
    user when they ask, so the intent names the step and the outcome instead of the value."""
    text = render(task.intent, values)
    for i in inputs:
        if i.source == "upstream" and i.value is not None:
            ref = f"the {(i.from_output or i.name).replace('_', ' ')} from step {i.from_node}"
            value = str(i.value)
            text = text.replace("{{" + i.name + "}}", ref)
            if len(value) >= 3:
                text = text.replace(value, ref)
    return str(text)


def _accumulate_allowed(nodes: list[TaskNode]) -> list[TaskNode]:
    """A node's "no other changes" condition is checked on the diff from the initial state, so
    it must also allow what earlier nodes on the same MCP were allowed to change."""
    earlier: dict[str, list[AllowedChange]] = {}
    out = []
    for n in nodes:
        prior = earlier.setdefault(n.task.mcp, [])
        checks: list[Check] = []
        for c in n.checks:
            if isinstance(c, NoOtherChanges):
                merged = list(c.allowed) + [a for a in prior if a not in c.allowed]
                c = c.model_copy(update={"allowed": merged})
            checks.append(c)
        for c in n.checks:
            if isinstance(c, NoOtherChanges):
                prior.extend(a for a in c.allowed if a not in prior)
        if n.task.writes:
            prior.extend(
                a for a in (AllowedChange(table=t) for t in n.task.entities) if a not in prior
            )
        out.append(n.model_copy(update={"checks": checks}))
    return out


def _home(
    binding: EntityBinding, chosen: list[AtomicTask], bundles: dict[str, BundleView]
) -> str | None:
    """The MCP the binding's values come from: `choose_binding` lists it first in `refs`."""
    del chosen, bundles
    return next(iter(binding.refs), None)


# ----------------------------------------------------------------------------- strategies


def programmatic_proposal(state: CompositionState, bundles: dict[str, BundleView]) -> TaskGraph:
    binding = choose_binding(state.pool, bundles)
    k = min(state.nodes_wanted, len(state.pool))

    def touches(t: AtomicTask) -> int:
        if binding is None or t.mcp not in binding.refs:
            return 0
        table = binding.refs[t.mcp]
        b = bundles[t.mcp]
        hit = any(
            e == table and binding_key(b, e, f) in binding.value
            for e, f, _ in input_fields(t, b).values()
        )
        return 2 if hit else (1 if table in t.entities else 0)

    def deletes_bound(t: AtomicTask) -> bool:
        return (
            binding is not None
            and _op(t, bundles[t.mcp]) == "delete"
            and binding.refs.get(t.mcp) in t.entities
        )

    def feeds(t: AtomicTask) -> int:
        """Keys of the bound object `t` reports that a later task may need."""
        if binding is None or t.mcp not in binding.refs:
            return 0
        b = bundles[t.mcp]
        return sum(
            1
            for e, f in output_fields(t, b).values()
            if e == binding.refs[t.mcp] and binding_key(b, e, f) in binding.value
        )

    def chains(t: AtomicTask) -> int:
        """Whether `t` can start or end an information edge: it reports values of a real row,
        or writes text a value found elsewhere can fill."""
        b = bundles[t.mcp]
        return int(bool(reported_values(t, b, 0) or writable_text(b, t)))

    ranked = sorted(
        state.pool,
        key=lambda t: (deletes_bound(t), -min(touches(t), 1), -chains(t), -touches(t), -feeds(t)),
    )
    transitions = transition_graph(bundles)
    banned: set[str] = set()
    graph = None
    # Lifecycle-aware choice: a task that would undo an earlier node's effect on the same
    # object (approve then reject one leave request) is replaced by the next candidate.
    flows = FlowIndex(state.pool, bundles)
    for _ in range(k + 1):
        chosen = with_information_edge(pick(ranked, k, banned), ranked, banned, flows)
        chosen = with_created_reference(chosen, ranked, banned, flows)
        mcp_rank = {
            m: i
            for i, m in enumerate(
                sorted(
                    {t.mcp for t in chosen},
                    key=lambda m: (binding is None or m != _home(binding, chosen, bundles), m),
                )
            )
        }
        chosen = execution_order(
            chosen,
            lambda t, rank=mcp_rank: (_OP_RANK.get(_op(t, bundles[t.mcp]), 1), rank[t.mcp]),
            flows,
        )
        graph = assemble(state, chosen, bundles, binding)
        found = contradictions(graph, transitions)
        if not found:
            return graph
        banned.add(graph.node(found[0].second.node).task.id)
    assert graph is not None
    return graph  # still contradictory: the check rejects it with its reason


def transition_graph(bundles: dict[str, BundleView]) -> TransitionGraph:
    return TransitionGraph({m: b.contracts.contracts for m, b in bundles.items()})


class LLMNode(BaseModel):
    task_id: str
    upstream: dict[str, str] = Field(
        default_factory=dict, description="input name -> 'n<k>.<output>' of an earlier node"
    )


class LLMGraphDraft(BaseModel):
    nodes: list[LLMNode] = Field(
        min_length=1, description="In execution order; node i gets id n<i+1>."
    )
    binding_key: str | None = Field(
        default=None, description="The link key of the shared business object, if any."
    )


_SYSTEM = (
    "You compose atomic tool-use tasks into one multi-step task for a single business objective. "
    "Choose tasks from the candidate pool, order them so that information flows from earlier to later "
    "tasks, and wire inputs to earlier outputs where one task needs what another retrieves."
)


def llm_proposal(
    llm: BaseChatModel, state: CompositionState, bundles: dict[str, BundleView]
) -> TaskGraph:
    pool = [
        {
            "task_id": t.id,
            "mcp": t.mcp,
            "intent": t.intent,
            "inputs": {i.name: i.value for i in t.inputs},
            "outputs": t.outputs,
        }
        for t in state.pool
    ]
    prompt = (
        f"Objective: {state.objective}\nUse exactly {state.nodes_wanted} tasks.\nCandidate pool: {pool}\n"
        + (
            "Your previous graph had these problems:\n"
            + "".join(f"- {i.message}\n" for i in state.issues)
            if state.issues
            else ""
        )
    )
    draft = ask_structured(llm, LLMGraphDraft, prompt, system=_SYSTEM, what="graph")
    by_id = {t.id: t for t in state.pool}
    chosen: list[AtomicTask] = []
    for n in draft.nodes:
        task = by_id.get(n.task_id)
        if task is None:
            # keep the wrong choice visible to the checks: a node with a task outside the selection
            task = AtomicTask(
                id=n.task_id, mcp=state.pool[0].mcp, intent="(unknown task)", tool_chain=[]
            )
        chosen.append(task)
    binding = choose_binding([t for t in chosen if t.id in by_id], bundles)
    sources: dict[tuple[int, str], tuple[int, str]] = {}
    for idx, n in enumerate(draft.nodes):
        for inp, ref in n.upstream.items():
            node, _, out = ref.partition(".")
            if node.startswith("n") and node[1:].isdigit():
                sources[(idx, inp)] = (int(node[1:]) - 1, out)
    graph = assemble(state, chosen, bundles, binding, sources=sources)
    # upstream wiring the model asked for on inputs that are not aligned: apply it verbatim so
    # that an impossible wiring (a later node, a missing outcome) reaches the checks
    wired: list[TaskNode] = []
    edges = list(graph.edges)
    for idx, tnode in enumerate(graph.nodes):
        inputs = []
        for i in tnode.inputs:
            src = sources.get((idx, i.name))
            if src is not None and i.source != "upstream":
                i = i.model_copy(
                    update={
                        "source": "upstream",
                        "from_node": f"n{src[0] + 1}",
                        "from_output": src[1],
                    }
                )
                edges.append(
                    TaskEdge(
                        source=f"n{src[0] + 1}",
                        target=tnode.id,
                        kind=EdgeKind.INFORMATION,
                        fields=[src[1]],
                    )
                )
            inputs.append(i)
        wired.append(tnode.model_copy(update={"inputs": inputs}))
    graph = graph.model_copy(update={"nodes": wired, "edges": edges})
    return graph.model_copy(update={"order": stable_order(graph) or []})


# ----------------------------------------------------------------------------- graph


def propose(state: CompositionState, runtime: Runtime[CompositionContext]) -> dict[str, Any]:
    bundles, llm = runtime.context.bundles, runtime.context.llm
    if llm is None:  # deterministic: proposing again gives the same graph
        graph = programmatic_proposal(state, bundles)
    else:
        try:
            graph = llm_proposal(llm, state, bundles)
        except ModelOutputError as exc:
            return {
                "graph": None,
                "attempts": state.attempts + 1,
                "retryable": True,
                "issues": [
                    GraphIssue(kind="invalid_output", message=f"composition output invalid: {exc}")
                ],
            }
    return {"graph": graph, "attempts": state.attempts + 1, "retryable": llm is not None}


def check(state: CompositionState, runtime: Runtime[CompositionContext]) -> dict[str, Any]:
    if state.graph is None:
        return {}
    transitions = transition_graph(runtime.context.bundles)
    return {"issues": check_graph(state.graph, {t.id for t in state.pool}, transitions)}


def route_after_check(state: CompositionState) -> str:
    if state.issues and state.retryable and state.attempts < state.max_attempts:
        return "propose"
    return END


def build_composition_graph(
    *, checkpointer: Checkpointer = None
) -> CompiledStateGraph[CompositionState, CompositionContext, CompositionState, CompositionState]:
    """Compose one task graph; invoke with a `CompositionState` (pool = the sampled candidates)
    and `context=CompositionContext(bundles, llm)`."""
    g = StateGraph(CompositionState, context_schema=CompositionContext)
    g.add_node("propose", propose)
    g.add_node("check", check)
    g.add_edge(START, "propose")
    g.add_edge("propose", "check")
    g.add_conditional_edges("check", route_after_check, ["propose", END])
    return g.compile(checkpointer=checkpointer)


@functools.cache
def _compiled() -> CompiledStateGraph[
    CompositionState, CompositionContext, CompositionState, CompositionState
]:
    return build_composition_graph()


def compose_graph(
    state: CompositionState, bundles: dict[str, BundleView], llm: BaseChatModel | None = None
) -> CompositionState:
    """One composition (the graph is compiled once per process; bundles and model per run)."""
    out = _compiled().invoke(state, context=CompositionContext(bundles, llm))
    return CompositionState.model_validate(out)
