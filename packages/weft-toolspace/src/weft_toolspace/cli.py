"""`weft-toolspace install | mine | cluster | walk | synthesize` — Algorithm 1 one stage at a time, each stage
reading the previous one's files in OUT:

    weft-toolspace mine -o OUT [--record EPISODES --steps S] [TRACES...]   OUT/traces.jsonl, graph.json
    weft-toolspace cluster -o OUT                                          OUT/environments.json
    weft-toolspace walk -o OUT [--length L --min-length M --envs K --attempts N]         OUT/chains.jsonl
                               [--search-past-end S]
    weft-toolspace synthesize -o OUT [--model M]                           OUT/tasks/*.json, snapshots/
    weft-toolspace evidence -o OUT [--to FILE]                             OUT/evidence.json
    weft-toolspace pro -o OUT --servers S1,S2 [--length L --envs K]        OUT/pro/ (§5 upgrade)

Stages that execute (record, state-edge witnessing, walk, synthesize) host the real servers in a
MegaMCP host on 127.0.0.1 for the run. Errors print one line and exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from weft_toolspace import servers
from weft_toolspace.clusters import cluster, environment_of
from weft_toolspace.evidence import evidence_of
from weft_toolspace.exceptions import ToolSpaceError
from weft_toolspace.graph import ToolGraph
from weft_toolspace.models import Chain, Environment, TraceRecord
from weft_toolspace.pipeline import hosted, mine, record, save_json, save_traces
from weft_toolspace.pro import ProConfig, link_outside, run_pro
from weft_toolspace.settings import ToolSpaceSettings
from weft_toolspace.synthesize import synthesize
from weft_toolspace.traces import load_traces
from weft_toolspace.walk import WalkConfig, Walker


def _graph(out: Path) -> ToolGraph:
    path = out / "graph.json"
    if not path.exists():
        raise ToolSpaceError(f"{path} is missing: run `weft-toolspace mine -o {out}` first")
    return ToolGraph.model_validate_json(path.read_text(encoding="utf-8"))


def _envs(out: Path) -> list[Environment]:
    path = out / "environments.json"
    if not path.exists():
        raise ToolSpaceError(f"{path} is missing: run `weft-toolspace cluster -o {out}` first")
    return [Environment.model_validate(e) for e in json.loads(path.read_text(encoding="utf-8"))]


def _servers_in(mcps: set[str]) -> list[str]:
    """Registered MCP ids of the real servers are their names; anything else cannot be hosted."""
    unknown = sorted(m for m in mcps if m not in servers.SPECS)
    if unknown:
        raise ToolSpaceError(
            f"cannot host {', '.join(unknown)}: not one of {', '.join(servers.SPECS)}"
        )
    return sorted(mcps)


async def _install(settings: ToolSpaceSettings, names: list[str], data: Path) -> Any:
    ok, failed = servers.install_all(names, settings.server_home)
    if failed:
        raise ToolSpaceError("; ".join(f"{n}: {why}" for n, why in failed.items()))
    return ok


async def cmd_mine(args: argparse.Namespace, settings: ToolSpaceSettings) -> dict[str, Any]:
    out: Path = args.out
    traces: list[TraceRecord] = []
    failures: list[str] = []
    if args.traces:
        traces, failures = load_traces(args.traces)
        for f in failures:
            print(f"skipped: {f}", file=sys.stderr)
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    with tempfile.TemporaryDirectory(prefix="weft-toolspace-") as tmp:
        if args.record or args.witness:
            await _install(settings, names, Path(tmp))
            async with hosted(Path(tmp)) as client:
                if args.record:
                    traces += await record(
                        client,
                        names,
                        settings.server_home,
                        episodes=args.record,
                        steps=args.steps,
                        seed=settings.seed,
                    )
                else:
                    await servers.register(
                        client,
                        _servers_in({c.mcp for t in traces for c in t.calls}),
                        settings.server_home,
                    )
                graph = await mine(
                    client if args.witness else None,
                    traces,
                    min_count=settings.min_count,
                    min_weight=settings.min_weight,
                )
        else:
            graph = await mine(
                None, traces, min_count=settings.min_count, min_weight=settings.min_weight
            )
    save_traces(traces, out / "traces.jsonl")
    save_json(graph.model_dump(mode="json"), out / "graph.json")
    return {
        "traces": len(traces),
        "skipped": len(failures),
        "nodes": len(graph.nodes),
        "edges": len(graph.edges),
        "share": graph.share(),
    }


async def cmd_cluster(args: argparse.Namespace, settings: ToolSpaceSettings) -> dict[str, Any]:
    envs = cluster(_graph(args.out), seed=settings.seed, resolution=settings.resolution)
    save_json([e.model_dump(mode="json") for e in envs], args.out / "environments.json")
    return {"environments": len(envs), "kinds": sorted({e.kind.value for e in envs})}


async def cmd_walk(args: argparse.Namespace, settings: ToolSpaceSettings) -> dict[str, Any]:
    graph, envs = _graph(args.out), _envs(args.out)
    names = _servers_in({n.mcp for n in graph.nodes.values()})
    cfg = WalkConfig(
        max_length=args.length,
        min_length=min(args.min_length, args.length),
        environments=args.envs,
        attempts=args.attempts,
        search_past_end=args.search_past_end,
        seed=settings.seed,
    )
    with tempfile.TemporaryDirectory(prefix="weft-toolspace-") as tmp:
        await _install(settings, names, Path(tmp))
        async with hosted(Path(tmp)) as client:
            await servers.register(client, names, settings.server_home)
            walker = Walker(client, graph, environment_of(envs), cfg)
            chains = await walker.run()
    (args.out / "chains.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in chains))
    s = walker.stats
    return {
        "tried": s.tried,
        "kept": s.kept,
        "rollbacks": s.rollbacks,
        "discarded": dict(s.discarded),
    }


async def cmd_synthesize(args: argparse.Namespace, settings: ToolSpaceSettings) -> dict[str, Any]:
    path = args.out / "chains.jsonl"
    if not path.exists():
        raise ToolSpaceError(f"{path} is missing: run `weft-toolspace walk -o {args.out}` first")
    chains = [
        Chain.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()
    ]
    writer = _writer(args.model)
    names = _servers_in({s.mcp for c in chains for s in c.steps})
    with tempfile.TemporaryDirectory(prefix="weft-toolspace-") as tmp:
        await _install(settings, names, Path(tmp))
        async with hosted(Path(tmp)) as client:
            await servers.register(client, names, settings.server_home)
            # The tasks name their stored s_0 (OUT/snapshots) and replayed from it.
            _graphs, stats = await synthesize(client, chains, writer=writer, export_to=args.out)
    return {
        "chains": stats.chains,
        "accepted": stats.accepted,
        "rejected": stats.rejected,
        "duplicates": stats.duplicates,
        "llm_rejected": stats.llm_rejected,
    }


async def cmd_evidence(args: argparse.Namespace, settings: ToolSpaceSettings) -> dict[str, Any]:
    evidence = evidence_of(
        _graph(args.out), source=f"weft-toolspace graph {args.out / 'graph.json'}"
    )
    dest: Path = args.to or args.out / "evidence.json"
    save_json(evidence.model_dump(mode="json"), dest)
    kinds = sorted({e.kind for e in evidence.edges})
    return {"edges": len(evidence.edges), "kinds": kinds, "written": str(dest)}


def _writer(spec: str | None) -> Any:
    if not spec:
        return None
    from weft_core.llm import make_chat_model
    from weft_toolspace.writers import LLMTaskWriter

    model = make_chat_model(spec, setting="--model")
    return LLMTaskWriter(model) if model is not None else None


async def cmd_pro(args: argparse.Namespace, settings: ToolSpaceSettings) -> dict[str, Any]:
    graph = _graph(args.out)
    own = [n.strip() for n in args.servers.split(",") if n.strip()]
    pro = ProConfig(
        length_factor=settings.pro_length_factor,
        extra_environments=settings.pro_extra_environments,
        hops=settings.pro_hops,
    )
    env = link_outside(graph, own, hops=pro.hops)  # bad --servers fails before any install
    names = _servers_in({n.mcp for n in env.graph.nodes.values()})
    base = WalkConfig(
        max_length=args.length,
        min_length=min(args.min_length, args.length),
        environments=args.envs,
        attempts=args.attempts,
        seed=settings.seed,
    )
    with tempfile.TemporaryDirectory(prefix="weft-toolspace-") as tmp:
        await _install(settings, names, Path(tmp))
        async with hosted(Path(tmp)) as client:
            await servers.register(client, names, settings.server_home)
            run = await run_pro(
                client,
                graph,
                own,
                args.out / "pro",
                base=base,
                pro=pro,
                resolution=settings.resolution,
                writer=_writer(args.model),
            )
    return run.model_dump(mode="json", exclude={"linked"}) | {
        "linked": [t.node for t in run.linked]
    }


async def cmd_install(args: argparse.Namespace, settings: ToolSpaceSettings) -> dict[str, Any]:
    ok, failed = servers.install_all(list(servers.SERVERS), settings.server_home)
    if failed:
        raise ToolSpaceError("; ".join(f"{n}: {why}" for n, why in failed.items()))
    return {"installed": ok, "home": str(settings.server_home)}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="weft-toolspace", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install", help="install the five real MCP servers into the server home")
    m = sub.add_parser("mine", help="record and/or read traces, mine the tool-space graph")
    m.add_argument("traces", nargs="*", type=Path, help="trace files or folders (JSON / JSONL)")
    m.add_argument("--record", type=int, default=0, help="episodes to record on the real servers")
    m.add_argument("--steps", type=int, default=20, help="calls per recorded episode")
    m.add_argument(
        "--servers",
        default=",".join(servers.SERVERS),
        help="servers to record on (or suites: repo = filesystem + git over one workspace)",
    )
    m.add_argument(
        "--witness", action="store_true", help="witness state edges by counterfactual replay"
    )
    c = sub.add_parser("cluster", help="cluster the graph into environments")
    w = sub.add_parser("walk", help="state-aware random walks on the hosted servers")
    w.add_argument(
        "--length", type=int, default=30, help="L: most calls per chain (it may end earlier)"
    )
    w.add_argument(
        "--min-length", type=int, default=5, help="least calls a kept chain has (paper §4.3: 5)"
    )
    w.add_argument("--envs", type=int, default=2, help="K: environments per chain")
    w.add_argument("--attempts", type=int, default=10, help="walk attempts")
    w.add_argument(
        "--search-past-end",
        type=int,
        default=WalkConfig().search_past_end,
        help="rollbacks of a complete chain's end looking for one doing more work (0: none)",
    )
    s = sub.add_parser("synthesize", help="reverse-synthesize verified TaskGraphs from chains")
    s.add_argument(
        "--model", default=None, help="chat model for task texts (default: programmatic)"
    )
    ev = sub.add_parser(
        "evidence",
        help="the graph's witnessed data/state edges for `weft-tasks compose --evidence`",
    )
    ev.add_argument(
        "--to", type=Path, default=None, help="file to write (default OUT/evidence.json)"
    )
    pr = sub.add_parser(
        "pro", help="§5 upgrade: link outside tools into an environment, walk longer (OUT/pro)"
    )
    pr.add_argument(
        "--servers", required=True, help="the environment's own servers, comma-separated"
    )
    pr.add_argument(
        "--length", type=int, default=5, help="L (most calls) of the environment's own walks"
    )
    pr.add_argument(
        "--min-length", type=int, default=2, help="least calls of the environment's own walks"
    )
    pr.add_argument("--envs", type=int, default=1, help="K of the environment's own walks")
    pr.add_argument("--attempts", type=int, default=6, help="walk attempts, base and Pro each")
    pr.add_argument(
        "--model", default=None, help="chat model for task texts (default: programmatic)"
    )
    for q in (m, c, w, s, ev, pr):
        q.add_argument("-o", "--out", type=Path, required=True, help="the run folder")
    return p


_COMMANDS = {
    "install": cmd_install,
    "mine": cmd_mine,
    "cluster": cmd_cluster,
    "walk": cmd_walk,
    "synthesize": cmd_synthesize,
    "evidence": cmd_evidence,
    "pro": cmd_pro,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = ToolSpaceSettings()
        if getattr(args, "out", None) is not None:
            args.out.mkdir(parents=True, exist_ok=True)
        summary = asyncio.run(_COMMANDS[args.cmd](args, settings))
    except (ToolSpaceError, OSError, ValueError) as exc:
        print(f"weft-toolspace {args.cmd}: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
