"""Benchmark: ToolSpace (Algorithm 1) end to end on traces recorded from the five real offline MCP
servers (filesystem, memory, git, sqlite, time) hosted in MegaMCP's command tier on 127.0.0.1.

Run: uv run python benchmarks/toolspace/run.py [--episodes 16 --steps 20 --attempts 12
     --length 30 --min-length 5 --repeat-weight 0 --search-past-end 12 --envs 2 --min-count 2
     --resolution 2.0]
     [--recorder explorer | teacher] [--traces FILE [--state-pairs FILE]] [--json FILE]
     [--keep DIR] [--examples crm,helpdesk,orders | all] [--servers repo,memory,sqlite,time]
     (--traces: mine recorded traces instead of recording; KEEP/state_pairs.json holds the
     witnessed state pairs, which --state-pairs reuses instead of replaying them again, KEEP/walk_log.jsonl every neighbour a walk tried and its outcome; --examples: the example MCPs of examples/mcps/, synthesized into
     weft-envsynth bundles and hosted in MegaMCP's bundle tier, are explored alongside the real
     servers; --servers: which to host, default the five; `repo` is the suite of filesystem and
     git over one workspace, so notes written are committed, logged and shown)

Environments are materialised as §4.1.3 says (`weft_toolspace.environments`): stateless servers
(time) are answered by a replay server over the recorded results, state-query environments start
from s_0 seeded from recorded outputs, and walks and acceptance replays start from that stored s_0.

Prints: edges by type with their share, edges by source (between real servers, between example
MCPs, or across the two) (paper: data 69%, state 25%, retry 6%), nodes, clusters by
kind, walks tried / kept / rollbacks and why kept walks ended, tasks accepted by replay from s0,
calls per task (mean, median, max and the distribution: a walk's length is an outcome, L =
--length is only its maximum), distinct tools and environments per task (paper: 18.86 calls,
2.29 environments), and the precision of data edges on
the hand-checked sample in `data_edge_labels.json` (edges keyed `source -> target`, labelled by
reading the recorded pairs; edges not in the sample are counted as unlabelled).

The traces come from `weft_toolspace.explore` (`--recorder explorer`, the default: a random
programmatic explorer, rules, no model) or from `weft_toolspace.teacher` (`--recorder teacher`:
a workflow teacher, rules, no model, that does multi-server project work with the values the
servers returned: notes read back into memory entities, rows from values read elsewhere, notes from
query results, a git branch per component, the clock recorded, ids carried between the example MCPs
and the notes, objects revisited); the environments, chains and tasks are real executions; task
*solving* by a model is not measured here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from weft_core.console import summary_table
from weft_toolspace import servers
from weft_toolspace.clusters import cluster, environment_of
from weft_toolspace.counterfactual import witness_all
from weft_toolspace.environments import (
    example_bundles,
    example_names,
    materialise,
    register_bundles,
)
from weft_toolspace.export import SNAPSHOTS, store_initial_state
from weft_toolspace.graph import build_graph
from weft_toolspace.models import EdgeKind
from weft_toolspace.pipeline import hosted, record, save_json, save_traces
from weft_toolspace.settings import ToolSpaceSettings
from weft_toolspace.synthesize import synthesize
from weft_toolspace.traces import load_traces
from weft_toolspace.walk import WalkConfig, Walker

LABELS = Path(__file__).with_name("data_edge_labels.json")


async def run(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    settings = ToolSpaceSettings()
    names = [n for n in args.servers.split(",") if n]
    ok, failed = servers.install_all(names, settings.server_home)
    t0 = time.perf_counter()
    times: dict[str, float] = {}
    wanted = (
        example_names()
        if args.examples == "all"
        else [n for n in (args.examples or "").split(",") if n]
    )
    bundles = example_bundles(wanted, out / "bundles") if wanted else {}
    times["bundles_s"] = time.perf_counter() - t0
    async with hosted(out / "megamcp") as client:
        if args.traces is not None:
            await servers.register(client, ok, settings.server_home)
            traces, problems = load_traces([args.traces])
            if problems:
                raise SystemExit("; ".join(problems))
            await register_bundles(client, bundles)
        else:
            traces = await record(
                client,
                ok,
                settings.server_home,
                episodes=args.episodes,
                steps=args.steps,
                seed=args.seed,
                bundles=bundles,
                recorder=args.recorder,
            )
        save_traces(traces, out / "traces.jsonl")
        times["record_s"] = time.perf_counter() - t0 - times["bundles_s"]
        # State edges are witnessed once and kept, so other pruning settings can be tried offline.
        if args.state_pairs is not None:
            pairs = {(str(t), int(i)) for t, i in json.loads(args.state_pairs.read_text())}
        else:
            pairs = await witness_all(client, traces)
        save_json(sorted(pairs), out / "state_pairs.json")
        graph = build_graph(
            traces, state_pairs=pairs, min_count=args.min_count, min_weight=settings.min_weight
        )
        save_json(graph.model_dump(mode="json"), out / "graph.json")
        times["mine_s"] = time.perf_counter() - t0 - times["record_s"] - times["bundles_s"]
        envs = cluster(graph, seed=args.seed, resolution=args.resolution)
        # §4.1.3: replay servers for stateless servers, s_0 seeded from recorded outputs for
        # state-query environments; walks and acceptance start from the stored s_0.
        mat = await materialise(
            client, envs, traces, out, hosted=set(ok) | set(bundles), bundles=bundles
        )
        initial = await store_initial_state(
            client,
            sorted({n.mcp for n in graph.nodes.values()}),
            out / SNAPSHOTS,
            seeds=mat.seeds,
            bundles=mat.bundles,
        )
        cfg = WalkConfig(
            max_length=args.length,
            min_length=args.min_length,
            repeat_weight=args.repeat_weight,
            environments=args.envs,
            attempts=args.attempts,
            seed=args.seed,
            revisit_decay=args.revisit_decay,
            search_past_end=args.search_past_end,
        )
        walker = Walker(client, graph, environment_of(envs), cfg, initial=initial)
        t1 = time.perf_counter()
        chains = await walker.run()
        times["walk_s"] = time.perf_counter() - t1
        (out / "walk_log.jsonl").write_text("".join(json.dumps(x) + "\n" for x in walker.stats.log))
        (out / "chains.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in chains))
        t2 = time.perf_counter()
        # Acceptance replays from the stored s_0 each task names (as `weft run` rolls it out);
        # tasks and s_0 files land in OUT/tasks and OUT/snapshots.
        tasks, sstats = await synthesize(client, chains, export_to=out, initial=initial)
        times["synthesize_s"] = time.perf_counter() - t2
    kinds = Counter(e.kind.value for e in graph.edges)
    total = sum(kinds.values()) or 1
    by_chain = {c.id: c for c in chains}
    calls = [len(by_chain[g.id].steps) for g in tasks]
    env_counts = [len(by_chain[g.id].environments) for g in tasks]
    # Length by repetition is not length: a chain of 13 create_ticket calls has 15 calls and 3
    # distinct tools. Reported beside the length so the goal cannot be met by cycling.
    distinct = [len({s.node for s in by_chain[g.id].steps}) for g in tasks]
    raw = json.loads(LABELS.read_text()) if LABELS.exists() else {}
    labels: dict[str, bool] = {k: v for k, v in raw.items() if isinstance(v, bool)}
    data_keys = [f"{e.source} -> {e.target}" for e in graph.edges if e.kind is EdgeKind.DATA]
    judged = [labels[k] for k in data_keys if k in labels]

    def origin(node: str) -> str:
        return "example" if graph.nodes[node].mcp in bundles else "real"

    by_source = Counter(
        "-".join(sorted({origin(e.source), origin(e.target)})) + f" {e.kind.value}"
        for e in graph.edges
    )
    return {
        "recorder": args.recorder if args.traces is None else None,
        "examples": sorted(bundles),
        "materialised": mat.summary(),
        "nodes_by_source": dict(Counter(origin(n) for n in graph.nodes)),
        "edges_by_source": dict(sorted(by_source.items())),
        "min_count": args.min_count,
        "resolution": args.resolution,
        "servers": ok,
        "servers_failed": failed,
        "traces": len(traces),
        "calls": sum(len(t.calls) for t in traces),
        "adjacent_pairs": graph.pairs,
        "nodes": len(graph.nodes),
        "edges": {k.value: kinds.get(k.value, 0) for k in EdgeKind},
        "edge_share": {k.value: kinds.get(k.value, 0) / total for k in EdgeKind},
        "pruned": graph.pruned,
        "clusters": len(envs),
        "clusters_by_kind": dict(Counter(e.kind.value for e in envs)),
        "walks_tried": walker.stats.tried,
        "walks_kept": walker.stats.kept,
        "rollbacks": walker.stats.rollbacks,
        "walks_discarded": dict(walker.stats.discarded),
        "walk_outcomes": dict(walker.stats.outcomes),
        "tasks_accepted": sstats.accepted,
        "tasks_rejected": sstats.rejected,
        "duplicates": sstats.duplicates,
        "revisit_decay": args.revisit_decay,
        "repeat_weight": args.repeat_weight,
        "min_length": args.min_length,
        "search_past_end": args.search_past_end,
        "max_length": args.length,
        "walks_ended": dict(walker.stats.ended),
        "calls_per_walk": sorted(len(c.steps) for c in chains),
        "calls_per_task": sorted(calls),
        "calls_per_task_mean": statistics.mean(calls) if calls else 0.0,
        "calls_per_task_median": statistics.median(calls) if calls else 0.0,
        "calls_per_task_max": max(calls, default=0),
        "calls_per_task_distribution": dict(sorted(Counter(calls).items())),
        "distinct_tools_per_task": sorted(distinct),
        "distinct_tools_per_task_mean": statistics.mean(distinct) if distinct else 0.0,
        "distinct_tools_per_task_max": max(distinct, default=0),
        "envs_per_task_mean": statistics.mean(env_counts) if env_counts else 0.0,
        "envs_per_task_max": max(env_counts, default=0),
        "data_edges_labelled": len(judged),
        "data_edges_unlabelled": len(data_keys) - len(judged),
        "data_edge_precision": (sum(judged) / len(judged)) if judged else None,
        **{k: round(v, 1) for k, v in times.items()},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=16)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--attempts", type=int, default=12)
    p.add_argument(
        "--length", type=int, default=WalkConfig().max_length, help="L: most calls per walk"
    )
    p.add_argument(
        "--min-length",
        type=int,
        default=WalkConfig().min_length,
        help="least calls of a kept walk (it ends on its own after, when no new work is left)",
    )
    p.add_argument(
        "--repeat-weight",
        type=float,
        default=WalkConfig().repeat_weight,
        help="weight factor of a neighbour repeating a (tool, object) pair (1.0: Eq. 3)",
    )
    p.add_argument(
        "--search-past-end",
        type=int,
        default=WalkConfig().search_past_end,
        help="rollbacks of a complete chain's end looking for one doing more work (0: none)",
    )
    p.add_argument("--envs", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--min-count", type=int, default=2, help="prune edges seen fewer times")
    p.add_argument(
        "--resolution",
        type=float,
        default=ToolSpaceSettings().resolution,
        help="Louvain resolution of the environment clustering",
    )
    p.add_argument(
        "--revisit-decay",
        type=float,
        default=WalkConfig().revisit_decay,
        help="weight factor per earlier visit of a node in the chain (1.0: Eq. 3 exactly)",
    )
    p.add_argument(
        "--recorder",
        choices=("explorer", "teacher"),
        default="explorer",
        help="recording policy: the random explorer or the workflow teacher",
    )
    p.add_argument(
        "--servers",
        default=",".join(servers.SERVERS),
        help="real servers (or suites: repo = filesystem + git over one workspace) to host",
    )
    p.add_argument("--traces", type=Path, default=None, help="reuse recorded traces (JSONL)")
    p.add_argument(
        "--state-pairs",
        type=Path,
        default=None,
        help="with --traces: reuse the witnessed state pairs (a kept run's state_pairs.json) "
        "instead of the counterfactual replays",
    )
    p.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    p.add_argument("--keep", type=Path, default=None, help="keep the run folder here")
    p.add_argument(
        "--examples",
        default=None,
        help="example MCPs to explore too: comma-separated names of examples/mcps/*.json, or all",
    )
    args = p.parse_args()
    if args.state_pairs is not None and args.traces is None:
        p.error("--state-pairs needs --traces (the pairs index those traces)")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        figures = asyncio.run(run(args, args.keep))
    else:
        with tempfile.TemporaryDirectory(prefix="toolspace-bench-") as tmp:
            figures = asyncio.run(run(args, Path(tmp)))
    rows = [
        (
            "traces / calls / adjacent pairs",
            f"{figures['traces']} / {figures['calls']} / {figures['adjacent_pairs']}",
        ),
        ("nodes", figures["nodes"]),
        *(
            (f"{k} edges (share)", f"{figures['edges'][k]} ({figures['edge_share'][k]:.0%})")
            for k in ("data", "state", "retry")
        ),
        ("nodes by source", json.dumps(figures["nodes_by_source"])),
        ("edges by source and type", json.dumps(figures["edges_by_source"])),
        ("pruned (low N_ij or w)", json.dumps(figures["pruned"])),
        ("materialised (bundles / seeded / replayed)", json.dumps(figures["materialised"])),
        ("clusters (by kind)", f"{figures['clusters']} {json.dumps(figures['clusters_by_kind'])}"),
        (
            "walks tried / kept / rollbacks",
            f"{figures['walks_tried']} / {figures['walks_kept']} / {figures['rollbacks']}",
        ),
        ("walks discarded", json.dumps(figures["walks_discarded"])),
        ("kept walks ended by", json.dumps(figures["walks_ended"])),
        ("neighbours tried, by outcome", json.dumps(figures["walk_outcomes"])),
        ("tasks accepted by replay", figures["tasks_accepted"]),
        ("tasks rejected", json.dumps(figures["tasks_rejected"])),
        (
            "calls per task mean / median / max",
            f"{figures['calls_per_task_mean']:.2f} / {figures['calls_per_task_median']} / "
            f"{figures['calls_per_task_max']}",
        ),
        ("calls per task: tasks", json.dumps(figures["calls_per_task_distribution"])),
        ("calls per kept walk", json.dumps(figures["calls_per_walk"])),
        (
            "distinct tools per task mean / max",
            f"{figures['distinct_tools_per_task_mean']:.2f} / "
            f"{figures['distinct_tools_per_task_max']}",
        ),
        (
            "envs per task mean / max",
            f"{figures['envs_per_task_mean']:.2f} / {figures['envs_per_task_max']}",
        ),
        (
            "data-edge precision (labelled / unlabelled)",
            f"{figures['data_edge_precision'] if figures['data_edge_precision'] is not None else '-'} "
            f"({figures['data_edges_labelled']} / {figures['data_edges_unlabelled']})",
        ),
        (
            "time record / mine / walk / synthesize (s)",
            f"{figures['record_s']} / {figures['mine_s']} / {figures['walk_s']} / {figures['synthesize_s']}",
        ),
    ]
    summary_table("ToolSpace on real offline MCP servers", ["figure", "value"], rows)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
