"""Evolution rounds (§3.2.2, dependency revalidation and iterative refinement).

One round: fresh rollouts of every current task version across views and harnesses -> reference
replays on fresh clones -> node diagnoses, rubrics -> failure units -> attribution -> targeted
revisions, each revalidated before it replaces anything -> the round record. Operational feedback
from MegaMCP (per-tool error and crash counts of the round) triggers construction-check
revalidation of the tools it names. A round whose record exists is never rerun; inside a round the
rollouts resume from their JSONL.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from weft_core.console import get_console
from weft_core.models import (
    ContractSet,
    Disclosure,
    EnvBundleManifest,
    TaskGraph,
    Trace,
    ViewMode,
    atomic_write_text,
)
from weft_evolve.attribution.agent import AttributionContext, attribute
from weft_evolve.attribution.rubric import RubricItem, judge_rubric, rubric_for
from weft_evolve.attribution.rules import NodeDiagnosis, diagnose_node
from weft_evolve.evidence.probe import StateProbe
from weft_evolve.evidence.replay import replay_reference
from weft_evolve.evidence.stats import backend_faults, read_tool_stats, stats_delta, with_faults
from weft_evolve.evidence.units import cross_view_patterns, failure_units
from weft_evolve.models import (
    Attribution,
    Component,
    EvidenceItem,
    Fix,
    ReferenceReplay,
    Revision,
    RoundRecord,
    RoundStats,
    Target,
    ToolStats,
)
from weft_evolve.revision.environment import revise_environment
from weft_evolve.revision.task import drop_node, rebind, reground
from weft_evolve.revision.verifier import revise_verifier
from weft_evolve.settings import EvolveSettings
from weft_evolve.verifier.generate import accept_reference
from weft_evolve.verifier.store import VerifierStore
from weft_tasks.rollout import RolloutSettings, plan_rollouts, run_rollouts


@dataclass
class EvolveWorld:
    """What the rounds act on: the MegaMCP client, the bundles by MCP id, the harnesses and the
    views, and where everything is written."""

    client: Any
    bundles: dict[str, Path]
    harnesses: dict[str, Any]
    views: list[tuple[ViewMode | str, Disclosure | str]]
    out: Path
    settings: EvolveSettings = field(default_factory=EvolveSettings)
    llm: Any = None
    on_round: Callable[[RoundRecord], None] | None = None
    gateway: Any = None  # a running CaptureGateway, when external harnesses (Hermes, OpenClaw) run
    # Where snapshot bytes lie (tasks name them by content address): MegaMCP's data dir, a corpus.
    snapshot_roots: list[Path] = field(default_factory=list)

    def contracts(self) -> dict[str, ContractSet]:
        return {m: ContractSet.load(b / "contracts.json") for m, b in self.bundles.items()}

    def versions(self) -> dict[str, int]:
        return {
            m: EnvBundleManifest.load(b / "manifest.json").version for m, b in self.bundles.items()
        }


def _log(msg: str) -> None:
    get_console().print(msg)


def load_tasks(folder: Path) -> dict[str, TaskGraph]:
    return {g.id: g for g in (TaskGraph.load(p) for p in sorted(folder.glob("*.json")))}


def save_tasks(graphs: dict[str, TaskGraph], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for g in graphs.values():
        g.save(folder / f"{g.id}.json")
    for p in folder.glob("*.json"):
        if p.stem not in graphs:
            p.unlink()


async def replays_for(
    world: EvolveWorld, graphs: dict[str, TaskGraph], probe: StateProbe, cache: Path
) -> dict[str, ReferenceReplay]:
    """Reference replays, cached per task version and MCP versions (a revised bundle or task
    gets a fresh replay; nothing else does)."""
    versions = world.versions()
    cache.mkdir(parents=True, exist_ok=True)
    out: dict[str, ReferenceReplay] = {}
    sem = asyncio.Semaphore(world.settings.concurrency)

    async def one(g: TaskGraph) -> None:
        key = (
            (g.content_hash or g.compute_hash()).removeprefix("sha256:")[:16]
            + "-"
            + "-".join(f"{m}{versions.get(m, 0)}" for m in g.mcps)
        )
        path = cache / f"{g.id}-{key}.json"
        if path.exists():
            out[g.id] = ReferenceReplay.model_validate_json(path.read_text(encoding="utf-8"))
            return
        async with sem:
            try:
                r = await replay_reference(world.client, g, probe)
            except Exception as exc:  # an unreachable host: the task's units stay open
                r = ReferenceReplay(
                    task_id=g.id,
                    task_hash=g.content_hash or "",
                    error=f"{type(exc).__name__}: {exc}"[:300],
                )
        if r.error is None:
            atomic_write_text(path, r.model_dump_json())
        out[g.id] = r

    await asyncio.gather(*(one(g) for g in graphs.values()))
    return out


def _stats(n: int, traces: list[Trace]) -> RoundStats:
    s = RoundStats(round=n)
    for t in traces:
        if t.failed_on_infrastructure:
            continue
        s.rollouts += 1
        calls = len(t.ledger)
        errors = sum(
            1
            for e in t.ledger
            if e.is_error and not (e.error_kind and e.error_kind.is_infrastructure)
        )
        s.calls += calls
        s.tool_errors += errors
        s.checkpoints += sum(1 for seg in t.segments if seg.outcome is not None)
        s.failed_checkpoints += sum(
            1 for seg in t.segments if seg.outcome is not None and not seg.outcome.passed
        )
        if t.final is not None and t.final.passed:
            s.selected_rollouts += 1
            s.selected_calls += calls
            s.selected_tool_errors += errors
    return s


def flagged_tools(operational: list[ToolStats], settings: EvolveSettings) -> list[ToolStats]:
    """Tools whose construction checks operational feedback reruns: any crash, any backend fault
    in the rollout ledgers (a route off the reference path is called too rarely for a rate), or
    an error rate over the threshold on enough calls."""
    return [
        t
        for t in operational
        if t.crashes > 0
        or t.faults > 0
        or (
            t.calls >= settings.min_calls_for_rate and t.error_rate >= settings.error_rate_threshold
        )
    ]


async def _revalidate_flagged(
    world: EvolveWorld, flagged: list[ToolStats]
) -> tuple[list[Attribution], list[str]]:
    """Operational feedback: rerun the construction checks of the bundles whose tools MegaMCP saw
    failing or crashing; a tool that now fails them is attributed to the environment."""
    from weft_core.models import EntityModel, MCPSpec
    from weft_envsynth.validate import validate

    atts: list[Attribution] = []
    actions: list[str] = []
    for mcp in sorted({t.mcp for t in flagged}):
        bundle = world.bundles.get(mcp)
        if bundle is None:
            continue
        spec = MCPSpec.load(bundle / "spec.json")
        report = await asyncio.to_thread(
            validate,
            bundle,
            spec,
            EntityModel.load(bundle / "entities.json"),
            ContractSet.load(bundle / "contracts.json"),
        )
        failing = report.failing_tools()
        tools = [t for t in flagged if t.mcp == mcp]
        for t in tools:
            crashed = " (crashes: a per-session process tier is advised)" if t.crashes else ""
            if t.faults:
                crashed += f" ({t.faults} undeclared error(s) in the rollout ledgers)"
            if t.tool in failing:
                detail = "; ".join(f"{c.name}: {c.detail}" for c in failing[t.tool])[:300]
                actions.append(
                    f"{mcp}.{t.tool}: {t.errors}/{t.calls} errors{crashed}; revalidation FAILED: {detail}"
                )
                atts.append(
                    _operational(
                        mcp,
                        t.tool,
                        "operational_revalidation_failed",
                        [
                            EvidenceItem(
                                source="megamcp_stats",
                                detail=f"{t.errors}/{t.calls} calls failed, {t.crashes} "
                                f"crashes, {t.faults} undeclared errors",
                                data=t.model_dump(),
                            ),
                            EvidenceItem(source="construction_checks", detail=detail),
                        ],
                    )
                )
            else:
                actions.append(
                    f"{mcp}.{t.tool}: {t.errors}/{t.calls} errors{crashed}; revalidation passed (errors are the callers')"
                )
    return atts, actions


async def run_round(
    n: int, graphs: dict[str, TaskGraph], world: EvolveWorld
) -> tuple[RoundRecord, dict[str, TaskGraph]]:
    t0 = time.perf_counter()
    rdir = world.out / "rounds" / str(n)
    rdir.mkdir(parents=True, exist_ok=True)
    settings = world.settings
    before = await read_tool_stats(world.client)
    plans = plan_rollouts(
        graphs.values(),
        world.views,
        list(world.harnesses),
        samples=settings.samples,
        models={k: h.model_name for k, h in world.harnesses.items()},
        harness_modes={k: h.modes for k, h in world.harnesses.items()},
    )
    _log(f"round {n}: {len(plans)} rollouts of {len(graphs)} task(s)")
    report = await run_rollouts(
        plans,
        world.client,
        world.harnesses,
        out=rdir / "traces.jsonl",
        settings=RolloutSettings(
            concurrency=settings.concurrency, progress=not get_console().quiet
        ),
        gateway=world.gateway,
    )
    traces = [t for t in report.traces if t.task_id in graphs]
    after = await read_tool_stats(world.client)
    contracts = world.contracts()
    operational = with_faults(stats_delta(before, after), backend_faults(traces, contracts))
    stats = _stats(n, traces)

    probe = StateProbe(world.client)
    replays = await replays_for(world, graphs, probe, world.out / "replays")
    tool_stats = {(t.mcp, t.tool): t for t in operational}
    diagnoses: dict[tuple[str, str], NodeDiagnosis] = {}
    rubrics: dict[tuple[str, str], list[RubricItem]] = {}
    for g in graphs.values():
        r = replays[g.id]
        for node in g.nodes:
            diagnoses[(g.id, node.id)] = diagnose_node(g, r, node.id, contracts, tool_stats)
            ok, _ = accept_reference(g, r, node.id, contracts)
            if ok:
                rubrics[(g.id, node.id)] = rubric_for(node, r.nodes[node.id], contracts)

    def rubric(graph: TaskGraph, node_id: str, trace: Trace, ledger: list[Any]) -> list[str]:
        items = rubrics.get((graph.id, node_id))
        return judge_rubric(items, ledger) if items else []

    units = failure_units(traces, graphs, rubric)
    patterns = cross_view_patterns(traces)
    ctx = AttributionContext(
        graphs=graphs, diagnoses=diagnoses, patterns=patterns, replays=replays, llm=world.llm
    )
    attributions = attribute(units, ctx)
    # The verifier audit: every node's checks against the effects of its accepted reference.
    for (tid, nid), d in sorted(diagnoses.items()):
        if d.rule == "effect_not_checked":
            attributions.append(
                Attribution(
                    unit_id=f"audit:{tid}:{nid}",
                    task_id=tid,
                    node_id=nid,
                    trace_id="",
                    view="",
                    harness="",
                    unit_kind="audit",
                    component=Component.VERIFIER,
                    target=d.target,
                    rule="audit_effect_not_checked",
                    evidence=d.evidence,
                )
            )
    flagged = flagged_tools(operational, settings)
    already = {
        (a.target.mcp, a.target.tool) for a in attributions if a.component is Component.ENVIRONMENT
    }
    ops_atts, ops_actions = await _revalidate_flagged(
        world, [t for t in flagged if (t.mcp, t.tool) not in already]
    )
    attributions += ops_atts
    revisions, graphs = await apply_revisions(
        attributions, graphs, replays, contracts, world, probe
    )
    stats.attributions = dict(
        Counter(
            a.component.value for a in attributions if not a.unit_id.startswith(("audit:", "ops:"))
        )
    )
    stats.revisions = dict(Counter(r.component.value for r in revisions if r.revalidated))
    stats.failed_revalidations = sum(1 for r in revisions if not r.revalidated)
    stats.seconds = time.perf_counter() - t0
    record = RoundRecord(
        round=n,
        stats=stats,
        attributions=attributions,
        revisions=revisions,
        operational=operational,
        operational_actions=ops_actions,
        task_versions={g.id: g.content_hash or "" for g in graphs.values()},
    )
    return record, graphs


def _operational(mcp: str, tool: str, rule: str, evidence: list[EvidenceItem]) -> Attribution:
    """An environment attribution from operational evidence (no task, trace or view)."""
    return Attribution(
        unit_id=f"ops:{mcp}:{tool}",
        task_id="",
        node_id="",
        trace_id="",
        view="",
        harness="",
        unit_kind="operational",
        component=Component.ENVIRONMENT,
        rule=rule,
        target=Target(mcp=mcp, tool=tool, fix=Fix.REVISE_ROUTE),
        evidence=evidence,
    )


def _found_failing(mcp: str, tool: str, rev: Revision) -> Attribution:
    return _operational(
        mcp,
        tool,
        "revalidation_found_failing",
        [
            EvidenceItem(
                source="construction_checks",
                detail=f"{tool}'s unchanged route failed the revalidation of {rev.target_key}",
                data={"revision": rev.target_key, "revalidation": rev.revalidation[-3:]},
            )
        ],
    )


async def apply_revisions(
    attributions: list[Attribution],
    graphs: dict[str, TaskGraph],
    replays: dict[str, ReferenceReplay],
    contracts: dict[str, ContractSet],
    world: EvolveWorld,
    probe: StateProbe,
) -> tuple[list[Revision], dict[str, TaskGraph]]:
    """Route each attributed component to its revision; policy and infrastructure change nothing."""
    graphs = dict(graphs)
    revisions: list[Revision] = []
    env: dict[str, dict[str, list[Attribution]]] = {}
    per_node: dict[tuple[str, str], list[Attribution]] = {}
    for a in attributions:
        if a.component is Component.ENVIRONMENT and a.target.mcp and a.target.tool:
            env.setdefault(a.target.mcp, {}).setdefault(a.target.tool, []).append(a)
        elif a.component in (Component.TASK, Component.VERIFIER) and a.task_id in graphs:
            per_node.setdefault((a.task_id, a.node_id or a.target.node_id or ""), []).append(a)
    pending = sorted(env.items())
    chased: set[str] = set()
    while pending:
        mcp, tools = pending.pop(0)
        bundle = world.bundles.get(mcp)
        if bundle is None:
            continue
        evidence = [e.detail for atts in tools.values() for a in atts[:2] for e in a.evidence[:1]]
        tasks = sorted({a.task_id for atts in tools.values() for a in atts if a.task_id})
        rev, path = await asyncio.to_thread(
            revise_environment,
            bundle,
            sorted(tools),
            evidence=evidence,
            llm=world.llm,
            task_ids=tasks,
        )
        rev.attributions = [a.unit_id for atts in tools.values() for a in atts]
        if path is not None:
            rec = await world.client.register(path)
            rev.revalidation.append(f"registered in MegaMCP as {rec.mcp_id} v{rec.version}")
        revisions.append(rev)
        found = [t for t in rev.failing_elsewhere if t not in tools]
        if found and mcp not in chased:
            # Dependency revalidation found other routes of the bundle failing: revise them too,
            # once per bundle (what that revision finds waits for the next round).
            chased.add(mcp)
            extra = [_found_failing(mcp, t, rev) for t in found]
            attributions.extend(extra)
            pending.append((mcp, {t: [a] for t, a in zip(found, extra, strict=True)}))
    store = VerifierStore(world.out / "verifiers")
    # Verifier revisions first: they rest on the current replays, which task revisions replace.
    for (tid, nid), atts in sorted(per_node.items()):
        comps = Counter(a.component for a in atts)
        comp = comps.most_common(1)[0][0]
        if comp is not Component.VERIFIER:
            continue
        suspect = {c for a in atts for c in a.target.check_ids}
        rev, new_graph, _v = await asyncio.to_thread(
            revise_verifier,
            graphs[tid],
            nid,
            replays[tid],
            contracts,
            store,
            suspect=suspect,
            llm=world.llm,
        )
        rev.attributions = [a.unit_id for a in atts]
        if new_graph is not None:
            graphs[tid] = new_graph
        revisions.append(rev)
    latest: dict[str, ReferenceReplay] = {}
    for (tid, nid), atts in sorted(per_node.items()):
        comps = Counter(a.component for a in atts)
        if comps.most_common(1)[0][0] is not Component.TASK:
            continue
        seen = latest.get(tid)
        if seen is not None and nid in seen.nodes:
            nr = seen.nodes[nid]
            if nr.executed and nr.outcome is not None and nr.outcome.passed:
                continue  # an earlier revision of this task (e.g. a re-grounded row) solved it
        task_rev, new_graph, check = await revise_task(
            graphs[tid], nid, atts, latest.get(tid) or replays.get(tid), world, probe
        )
        if new_graph is not None:
            graphs[tid] = new_graph
            if check is not None:
                latest[tid] = check
        revisions.append(task_rev)
    return revisions, graphs


async def revise_task(
    graph: TaskGraph,
    node_id: str,
    atts: list[Attribution],
    replay: ReferenceReplay | None,
    world: EvolveWorld,
    probe: StateProbe,
) -> tuple[Revision, TaskGraph | None, ReferenceReplay | None]:
    fixes = Counter(a.target.fix for a in atts)
    fix = fixes.most_common(1)[0][0]
    input_name = next((a.target.input_name for a in atts if a.target.input_name), None)
    rev = Revision(
        component=Component.TASK,
        target_key=f"task:{graph.id}:{node_id}",
        task_ids=[graph.id],
        fix=fix,
        from_version=f"{graph.id}@v{graph.version}",
        attributions=[a.unit_id for a in atts],
    )
    new: TaskGraph | None = None
    changes: list[str] = []
    if fix is Fix.REGROUND:
        tables = [str(e.data["entity"]) for a in atts for e in a.evidence if "entity" in e.data]
        new, changes = await reground(
            graph, node_id, world.client, tables or None, world.snapshot_roots
        )
    if new is None and fix in (Fix.REBIND, Fix.REGROUND):
        new, changes = rebind(graph, node_id, input_name, replay)
        if new is not None:
            rev.fix = Fix.REBIND
    droppable = {"input_not_supplied", "key_absent_from_state", "no_matching_state"}
    if new is None and not any(a.rule in droppable for a in atts):
        # Dropping a node changes the task: only when the evidence shows it cannot be supplied.
        rev.error = "no evidence-backed revision (nothing to rebind or re-ground)"
        return rev, None, None
    if new is None:
        new, changes = drop_node(graph, node_id)
        rev.fix = Fix.DROP_NODE
    if new is None:
        rev.error = "no revision possible (the graph would be empty)"
        return rev, None, None
    rev.changed = changes
    # Revalidation: the revised task's reference must solve the revised node, and every node the
    # old version's reference solved must stay solved.
    check = await replay_reference(world.client, new, probe)
    old_ok = {
        n
        for n, r in (replay.nodes.items() if replay else [])
        if r.outcome is not None and r.outcome.passed
    }
    bad = [
        n
        for n, r in check.nodes.items()
        if (n == node_id or n in old_ok)
        and not (r.executed and r.outcome is not None and r.outcome.passed)
    ]
    rev.revalidation = [
        f"reference replay of {new.id}@v{new.version}: "
        + ("all nodes pass" if not bad else f"fails {bad}")
    ]
    if check.error or bad:
        rev.error = check.error or f"revalidation failed on {bad}"
        return rev, None, None
    rev.revalidated = True
    rev.to_version = f"{new.id}@v{new.version}"
    return rev, new, check


async def evolve(
    graphs: dict[str, TaskGraph], world: EvolveWorld, rounds: int
) -> list[RoundRecord]:
    """Run `rounds` rounds (resuming: finished rounds are loaded, not rerun)."""
    records: list[RoundRecord] = []
    tasks_dir = world.out / "tasks"
    if tasks_dir.is_dir() and any(tasks_dir.glob("*.json")):
        graphs = load_tasks(tasks_dir)
    else:
        save_tasks(graphs, tasks_dir)
    for n in range(1, rounds + 1):
        path = world.out / "rounds" / f"{n}.json"
        if path.exists():
            records.append(RoundRecord.model_validate_json(path.read_text(encoding="utf-8")))
            continue
        record, graphs = await run_round(n, graphs, world)
        save_tasks(graphs, tasks_dir)
        atomic_write_text(path, record.model_dump_json(indent=1))
        records.append(record)
        if world.on_round is not None:
            world.on_round(record)
    return records
