"""Reverse verifiable task synthesis (§4.2.2, Algorithm 1 lines 8–12).

For a chain omega: candidate checks in Weft's check language come from its effects (V_trace after
each mutating step, V_state on the final state) and from the values it carried between calls (V_out:
a return must contain them). A recording replay from s_0 evaluates every candidate at its
checkpoint and keeps those that hold (the recorded s_1..s_L). The task text q is written from the
kept goals. Acceptance is a second, independent replay from s_0 on a fresh group: every check must
pass and every call must return what it returned during the walk (clock values masked). Accepted
samples become Weft TaskGraphs; near-duplicates are dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from weft_core.models import (
    AtomicTask,
    EdgeKind,
    ReferenceCall,
    SnapshotRef,
    TaskEdge,
    TaskGraph,
    TaskNode,
    TaskView,
    ViewMode,
)
from weft_core.models.check import Check
from weft_core.models.verifier import FINAL_CHECKPOINT, Verifier
from weft_toolspace.counterfactual import observation_text
from weft_toolspace.export import SNAPSHOTS, store_initial_state
from weft_toolspace.graph import data_links
from weft_toolspace.models import Chain, ChainStep, TraceCall
from weft_toolspace.traces import parse_value
from weft_toolspace.writers import Goal, ProgrammaticTaskWriter, TaskTextRejected, TaskWriter

if TYPE_CHECKING:
    from weft_megamcp import MegaMCPClient

_CHECK = TypeAdapter(Check)
_INSERT = re.compile(r"INSERT INTO (\w+)\s*\(([^)]*)\)\s*VALUES\s*\(([^)]*)\)", re.I)
_CREATE = re.compile(r"CREATE TABLE (\w+)", re.I)


def _check(**kw: Any) -> Check:
    return _CHECK.validate_python(kw)


def _effect_checks(step: ChainStep, k: int) -> list[tuple[Check, Goal]]:
    """What a mutating call's arguments say must now hold, with the goal in words."""
    a, out = step.arguments, []
    mcp, cid = step.mcp, f"s{k}"
    if isinstance(a.get("path"), str) and isinstance(a.get("content"), str):
        snippet = a["content"][:80]
        out.append(
            (
                _check(
                    kind="workspace_file",
                    id=f"{cid}-file",
                    mcp=mcp,
                    path=a["path"],
                    contains=snippet,
                ),
                Goal(
                    text=f"the file '{a['path']}' contains \"{snippet}\"",
                    required=[a["path"], snippet],
                ),
            )
        )
    if isinstance(a.get("destination"), str):
        out.append(
            (
                _check(kind="workspace_file", id=f"{cid}-moved", mcp=mcp, path=a["destination"]),
                Goal(text=f"a file '{a['destination']}' exists", required=[a["destination"]]),
            )
        )
    for i, ent in enumerate(a.get("entities") or []):
        if isinstance(ent, dict) and isinstance(ent.get("name"), str):
            n = ent["name"]
            out.append(
                (
                    _check(
                        kind="workspace_file",
                        id=f"{cid}-entity{i}",
                        mcp=mcp,
                        path="memory.jsonl",
                        contains=json.dumps({"name": n})[1:-1].replace(": ", ":"),
                    ),
                    Goal(text=f'the knowledge graph has an entity "{n}"', required=[n]),
                )
            )
    for i, obs in enumerate(a.get("observations") or []):
        if isinstance(obs, dict) and obs.get("contents"):
            text = str(obs["contents"][0])
            out.append(
                (
                    _check(
                        kind="workspace_file",
                        id=f"{cid}-obs{i}",
                        mcp=mcp,
                        path="memory.jsonl",
                        contains=text,
                    ),
                    Goal(text=f'"{obs.get("entityName")}" is noted as "{text}"', required=[text]),
                )
            )
    query = a.get("query")
    if isinstance(query, str):
        ins = _INSERT.search(query)
        if ins:
            cols = [c.strip() for c in ins.group(2).split(",")]
            vals = [v.strip().strip("'") for v in ins.group(3).split(",")]
            where = dict(zip(cols, vals, strict=False))
            out.append(
                (
                    _check(
                        kind="row_exists", id=f"{cid}-row", mcp=mcp, table=ins.group(1), where=where
                    ),
                    Goal(
                        text=f"table '{ins.group(1)}' has a row with "
                        + ", ".join(f"{c} = '{v}'" for c, v in where.items()),
                        required=[ins.group(1), *where.values()],
                    ),
                )
            )
        created = _CREATE.search(query)
        if created:
            out.append(
                (
                    _check(
                        kind="row_count",
                        id=f"{cid}-table",
                        mcp=mcp,
                        table=created.group(1),
                        op="ge",
                        value=0,
                    ),
                    Goal(text=f"a table '{created.group(1)}' exists", required=[created.group(1)]),
                )
            )
    if step.tool == "git_create_branch" and isinstance(a.get("branch_name"), str):
        b = a["branch_name"]
        out.append(
            (
                _check(
                    kind="workspace_file", id=f"{cid}-branch", mcp=mcp, path=f".git/refs/heads/{b}"
                ),
                Goal(text=f"the repository has a branch '{b}'", required=[b]),
            )
        )
    return out


def _as_call(step: ChainStep) -> TraceCall:
    return TraceCall(
        mcp=step.mcp,
        tool=step.tool,
        arguments=step.arguments,
        result=None if step.failed else step.result,
        error=str(step.result) if step.failed else None,
    )


def output_checks(chain: Chain) -> list[tuple[Check, Goal]]:
    """V_out: values carried from o_t into x_{t+1} must appear in what the tool returned."""
    out: list[tuple[Check, Goal]] = []
    seen: set[str] = set()
    for k in range(len(chain.steps) - 1):
        src, dst = chain.steps[k], chain.steps[k + 1]
        for link in data_links(_as_call(src), _as_call(dst)):
            value = _arg_value(dst.arguments, link.argument)
            if not isinstance(value, str) or value in seen:
                continue
            seen.add(value)
            out.append(
                (
                    _check(
                        kind="return_contains",
                        id=f"out{k}-{len(out)}",
                        mcp=src.mcp,
                        tool=src.tool,
                        value=value,
                    ),
                    Goal(text=f'report what the data shows about "{value}"', required=[value]),
                )
            )
    return out


def _arg_value(args: dict[str, Any], path: str) -> Any:
    cur: Any = args
    for part in path.split("."):
        if isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return None
    return cur


@dataclass
class Candidate:
    chain: Chain
    trace: dict[int, list[tuple[Check, Goal]]] = field(default_factory=dict)
    final: list[tuple[Check, Goal]] = field(default_factory=list)

    def verifier(self) -> Verifier:
        cps = {f"s{k}": [c for c, _ in cs] for k, cs in self.trace.items() if cs}
        return Verifier(checkpoints=cps | {FINAL_CHECKPOINT: [c for c, _ in self.final]})


def candidates(chain: Chain) -> Candidate:
    cand = Candidate(chain=chain)
    for k, step in enumerate(chain.steps):
        if step.mutated:
            effects = _effect_checks(step, k)
            if effects:
                cand.trace[k] = effects
                cand.final.extend(
                    (_check(**{**c.model_dump(), "id": f"final-{c.id}"}), g) for c, g in effects
                )
    cand.final.extend(output_checks(chain))
    return cand


@dataclass
class ReplayOutcome:
    passed: bool
    failed_checks: list[str]
    diverged_at: int | None
    reason: str = ""


async def replay(
    client: MegaMCPClient, cand: Candidate, s0: dict[str, SnapshotRef] | None = None
) -> tuple[ReplayOutcome, Candidate]:
    """Re-execute the chain from s_0 on a fresh group; returns the outcome and the candidate
    narrowed to the checks that held. `s0`: the stored initial state to start from (else each
    server's own start state)."""
    chain = cand.chain
    mcps = sorted({s.mcp for s in chain.steps})
    refs = s0 or {}
    group = await client.create_group(
        {m: (refs[m].uri if m in refs else None) for m in mcps},
        verifier=cand.verifier(),
        workspaces={m: r.workspace_uri for m, r in refs.items() if r.workspace_uri and m in mcps},
    )
    failed: list[str] = []
    kept = Candidate(chain=chain)
    diverged: int | None = None
    try:
        for k, step in enumerate(chain.steps):
            res = await client.call_tool(group, step.mcp, step.tool, dict(step.arguments))
            want = observation_text(step.result)
            seen = parse_value(res.structured if res.structured is not None else res.text)
            if diverged is None and (res.is_error != step.failed or observation_text(seen) != want):
                diverged = k
            if k in cand.trace:
                vr = await client.checkpoint_verify(group, f"s{k}")
                ok = {o.check_id for o in vr.outcomes if o.passed}
                failed += [c.id for c, _ in cand.trace[k] if c.id not in ok]
                kept.trace[k] = [(c, g) for c, g in cand.trace[k] if c.id in ok]
        vr = await client.verify(group)
        ok = {o.check_id for o in vr.outcomes if o.passed}
        failed += [c.id for c, _ in cand.final if c.id not in ok]
        kept.final = [(c, g) for c, g in cand.final if c.id in ok]
    finally:
        await client.close(group)
    outcome = ReplayOutcome(
        passed=not failed and diverged is None, failed_checks=failed, diverged_at=diverged
    )
    return outcome, kept


@dataclass
class SynthesisStats:
    chains: int = 0
    accepted: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    llm_rejected: int = 0
    duplicates: int = 0

    def reject(self, why: str) -> None:
        self.rejected[why] = self.rejected.get(why, 0) + 1


def to_task_graph(chain: Chain, text: str, cand: Candidate) -> TaskGraph:
    """One TaskNode per run of consecutive calls on one server; V_trace as node checkpoints."""
    runs: list[list[tuple[int, ChainStep]]] = []
    for k, s in enumerate(chain.steps):
        if runs and runs[-1][-1][1].mcp == s.mcp:
            runs[-1].append((k, s))
        else:
            runs.append([(k, s)])
    nodes: list[TaskNode] = []
    for i, run in enumerate(runs):
        mcp = run[0][1].mcp
        checks = [c for k, _ in run for c, _ in cand.trace.get(k, [])]
        task = AtomicTask(
            id=f"{chain.id}-n{i}",
            mcp=mcp,
            intent=f"part {i + 1} of: {text.splitlines()[0]}",
            tool_chain=[s.tool for _, s in run],
            reference_calls=[ReferenceCall(tool=s.tool, arguments=s.arguments) for _, s in run],
            checks=checks,
            writes=any(s.mutated for _, s in run),
        )
        nodes.append(TaskNode(id=f"n{i}", task=task, intent=task.intent, checks=checks))
    edges = [
        TaskEdge(
            source=f"n{i}",
            target=f"n{i + 1}",
            kind=EdgeKind.STATE
            if runs[i][0][1].mcp == runs[i + 1][0][1].mcp
            else EdgeKind.INFORMATION,
        )
        for i in range(len(runs) - 1)
    ]
    return TaskGraph(
        id=chain.id,
        objective=text,
        profile="ToolSpace",
        nodes=nodes,
        edges=edges,
        order=[n.id for n in nodes],
        final_checks=[c for c, _ in cand.final],
        views=[TaskView(mode=ViewMode.AGENTIC, brief=text)],
    )


def task_goals(cand: Candidate) -> list[Goal]:
    """The goals the task text states, one line each: a chain that rewrites a file yields the
    same goal once per write (the checks stay, the text need not repeat itself)."""
    return list({g.text: g for _, g in cand.final}.values())


def _is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(x in it for x in small)


def deduplicate(graphs: list[TaskGraph]) -> tuple[list[TaskGraph], int]:
    """Drop a task whose tool sequence is a subsequence of a kept longer one, or whose final
    checks equal a kept one's (the same goal reached another way)."""
    seqs = {g.id: [c.tool for n in g.nodes for c in n.task.reference_calls] for g in graphs}
    kept: list[TaskGraph] = []
    for g in sorted(graphs, key=lambda g: -len(seqs[g.id])):
        sig = sorted(
            json.dumps(c.model_dump(exclude={"id"}), sort_keys=True) for c in g.final_checks
        )
        if any(
            _is_subsequence(seqs[g.id], seqs[k.id])
            or sig
            == sorted(
                json.dumps(c.model_dump(exclude={"id"}), sort_keys=True) for c in k.final_checks
            )
            for k in kept
        ):
            continue
        kept.append(g)
    return kept, len(graphs) - len(kept)


async def synthesize(
    client: MegaMCPClient,
    chains: list[Chain],
    *,
    writer: TaskWriter | None = None,
    min_checks: int = 1,
    export_to: Path | None = None,
    initial: dict[str, SnapshotRef] | None = None,
) -> tuple[list[TaskGraph], SynthesisStats]:
    """Tasks accepted by replay from s_0, deduplicated. With `export_to`, s_0 is stored first
    (`export.store_initial_state`, under `export_to/snapshots/`), the acceptance replay starts
    from that stored state, the tasks name it in `initial_snapshots` and are saved sealed as
    `export_to/tasks/<id>.json`: what `weft run` rolls out and `weft verify` checks. `initial`:
    the stored s_0 the walks started from (seeded state-query environments, bundle seeds; stored
    under `export_to/snapshots/` when exporting): both replays start from it."""
    stats = SynthesisStats(chains=len(chains))
    fallback = ProgrammaticTaskWriter()
    accepted: list[TaskGraph] = []
    for chain in chains:
        mcps = sorted({s.mcp for s in chain.steps})
        start = {m: r for m, r in (initial or {}).items() if m in mcps} or None
        recorded, kept = await replay(client, candidates(chain), start)
        if recorded.diverged_at is not None:
            stats.reject("not reproducible from s0")
            continue
        if len(kept.final) < min_checks:
            stats.reject("no verifiable effect")
            continue
        goals = task_goals(kept)
        tools = sorted({s.tool for s in chain.steps})
        try:
            text = (writer or fallback).write(goals, tools)
        except TaskTextRejected:
            stats.llm_rejected += 1
            text = fallback.write(goals, tools)
        refs = start
        if export_to is not None and initial is None:
            refs = await store_initial_state(client, mcps, export_to / SNAPSHOTS)
        final, _ = await replay(client, kept, refs)
        if not final.passed:
            stats.reject("acceptance replay failed")
            continue
        graph = to_task_graph(chain, text, kept)
        if refs is not None:
            graph = graph.model_copy(update={"initial_snapshots": refs})
        accepted.append(graph)
    deduped, stats.duplicates = deduplicate(accepted)
    stats.accepted = len(deduped)
    if export_to is not None:
        deduped = [save_task(g, export_to / "tasks") for g in deduped]
    return deduped, stats


def save_task(graph: TaskGraph, folder: Path) -> TaskGraph:
    """`folder/<id>.json`, sealed: the hash is that of what a reader loads (JSON round trip)."""
    graph = TaskGraph.model_validate_json(
        graph.model_copy(update={"content_hash": None}).model_dump_json()
    ).sealed()
    graph.save(folder / f"{graph.id}.json")
    return graph
