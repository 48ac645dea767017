"""Reference replay on a fresh clone of a task version's snapshots (§3.2.2, evidence item 2).

The task's reference calls run node by node, in the stable topological order, in a new MegaMCP
session group created from the task's immutable initial snapshots. After each node the state
probe reads the node's MCP state, and the node's current checks are evaluated on exactly the
evidence MegaMCP's verifier would see. A node whose call fails does not stop later nodes: each
node gets its own verdict, so one defect does not hide another.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

from weft_core.checks import Evidence, evaluate
from weft_core.models import LedgerEntry, TaskGraph
from weft_evolve.evidence.probe import StateProbe
from weft_evolve.models import CallRecord, NodeReplay, ReferenceReplay
from weft_tasks.atomic.execution import MISSING, TemplateError, render
from weft_tasks.harness.teacher import bind_value, node_scope
from weft_tasks.views import disclosure_order

_CODE = re.compile(r"^\s*([a-z_]+)\s*:")


def error_code(text: str) -> str | None:
    """The leading code of a tool error text (`not_found: customer not found` -> not_found)."""
    m = _CODE.match(text or "")
    return m.group(1) if m else None


def call_value(result: Any) -> Any:
    structured = getattr(result, "structured", None)
    if structured is not None:
        if isinstance(structured, dict) and set(structured) == {"result"}:
            return structured["result"]
        return structured
    text = getattr(result, "text", "")
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return text


def node_evidence(graph: TaskGraph, replay: ReferenceReplay, node_id: str) -> dict[str, Evidence]:
    """The evidence MegaMCP's verifier would see at this node's checkpoint, per MCP."""
    node = replay.nodes[node_id]
    out: dict[str, Evidence] = {}
    for mcp, initial in replay.initial.items():
        # The latest probe of this MCP at or before the node: later nodes never leak back.
        latest: NodeReplay | None = None
        for nid in disclosure_order(graph):
            nr = replay.nodes.get(nid)
            if nr is not None and nr.mcp == mcp:
                latest = nr
            if nid == node_id:
                break
        final = latest.after if latest is not None and latest.after is not None else initial
        ledger = latest.ledger if latest is not None else []
        ws = latest.workspace_after if latest is not None else None
        out[mcp] = Evidence(
            mcp=mcp, initial=initial, final=final, ledger=ledger, workspace_after=ws
        )
    if node.mcp not in out:
        out[node.mcp] = Evidence(mcp=node.mcp)
    return out


def _fill_before(graph: TaskGraph, replay: ReferenceReplay) -> None:
    """Each node's `before` is the state its MCP had after the previous node on that MCP."""
    last: dict[str, Any] = dict(replay.initial)
    for node_id in disclosure_order(graph):
        nr = replay.nodes.get(node_id)
        if nr is None:
            continue
        nr.before = last.get(nr.mcp)
        if nr.after is not None:
            last[nr.mcp] = nr.after


async def replay_reference(
    client: Any, graph: TaskGraph, probe: StateProbe | None = None
) -> ReferenceReplay:
    """Replay `graph`'s reference solution on fresh clones; never raises for a task problem
    (a failing call or a missing input is evidence), only for an unreachable host."""
    probe = probe or StateProbe(client)
    task_hash = graph.content_hash or graph.compute_hash()
    replay = ReferenceReplay(task_id=graph.id, task_hash=task_hash)
    group = await client.create_group(
        graph.initial_dbs(),
        verifier=await probe.verifier_id(),
        task_id=f"evolve-replay:{graph.id}",
        bindings=graph.verifier().bindings,
        workspaces=graph.initial_workspaces(),
    )
    try:
        outputs: dict[str, dict[str, Any]] = {}
        order = disclosure_order(graph)
        pending: list[NodeReplay] = []  # nodes whose state is the next probe's
        for i, node_id in enumerate(order):
            node = graph.node(node_id)
            mcp = node.task.mcp
            nr = NodeReplay(node_id=node_id, mcp=mcp)
            scope = node_scope(graph, node, outputs)
            produced: dict[str, Any] = {}
            for call in node.task.reference_calls:
                try:
                    args = render(call.arguments, scope)
                except TemplateError as exc:
                    nr.template_error = str(exc.args[0])
                    break
                res = await client.call_tool(group, mcp, call.tool, args)
                rec = CallRecord(
                    mcp=mcp,
                    tool=call.tool,
                    arguments=args,
                    is_error=res.is_error,
                    error_code=error_code(res.text) if res.is_error else None,
                    text=res.text[:2000],
                    value=None if res.is_error else call_value(res),
                )
                nr.calls.append(rec)
                if res.is_error:
                    break
                for out_name, path in call.bind.items():
                    got = bind_value(rec.value, path)
                    if got is not MISSING:
                        produced[out_name] = got
                        scope[out_name] = got
            outputs[node_id] = produced
            replay.nodes[node_id] = nr
            pending.append(nr)
            # A probe costs a verifier process, so state is read only before a later write on
            # the same MCP would change what this node left, and once at the end. Reads never
            # change state, so every pending node's state is the one the probe sees.
            nxt = next(
                (graph.node(n) for n in order[i + 1 :] if graph.node(n).task.mcp == mcp), None
            )
            if (nxt is not None and nxt.task.writes) or i == len(order) - 1:
                state = await probe.read(group, f"after:{node_id}")
                if not replay.initial:
                    replay.initial = dict(state.initial)
                ledger = await client.ledger(group)
                for p in pending:
                    p.after = state.current.get(p.mcp)
                    p.workspace_after = state.workspace.get(p.mcp)
                    p.ledger = [
                        LedgerEntry.model_validate(e, from_attributes=True)
                        for e in ledger.get(p.mcp, [])
                    ]
                pending = []
        _fill_before(graph, replay)
        for node_id in replay.nodes:
            evidence = node_evidence(graph, replay, node_id)
            replay.nodes[node_id].outcome = evaluate(
                graph.node(node_id).checks, evidence, bindings=graph.verifier().bindings
            )
    finally:
        with contextlib.suppress(Exception):  # a close failure must not hide the evidence
            await client.close(group)
    return replay
