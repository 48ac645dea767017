"""Benchmark: the coverage-aware sampler with and without execution-witnessed ranking (issue 16
item 6), on the same libraries, seed and evidence.

    uv run python benchmarks/tasks/witnessed_ranking.py --evidence FILE [--n 60] [--seed 0]
        [--libraries DIR | --bundles DIR ...] [--out DIR] [--json FILE]

FILE is weft-core `ExecutionEvidence` (`weft-toolspace evidence -o RUN` writes one from a mined
tool-space graph). Without --libraries the example MCPs are synthesized and certified first (as
`compose_1000.py` does). Each side composes N tasks for real (embedded MegaMCP host, grounding,
reference replay of every task); then both corpora are measured against the same evidence:
multi-MCP tasks with a witnessed MCP pair, adjacent tool steps witnessed (inside each node's
chain and across each graph edge), the MCPs and domains the corpus covers and how evenly (the
most-used MCP's nodes over the least-used one's), and the rejections on the way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from weft_core.console import summary_table
from weft_core.models import ExecutionEvidence, TaskGraph
from weft_tasks.atomic.certify import bundle_dirs, certify_bundle
from weft_tasks.atomic.library import MCPLibrary, load_library
from weft_tasks.atomic.megamcp import megamcp_client
from weft_tasks.atomic.validation import MegaMCPValidator
from weft_tasks.compose.pipeline import Composer
from weft_tasks.compose.witnessed import WitnessIndex
from weft_tasks.settings import TasksSettings

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compose_1000 import synthesize_examples


async def certify(out: Path, bundles: list[str], seed: int) -> Path:
    sources = [Path(b) for b in bundles] or [synthesize_examples(out / "bundles")]
    settings = TasksSettings(seed=seed)
    async with megamcp_client(data_dir=out / ".megamcp-certify") as client:
        validator = MegaMCPValidator(client, concurrency=settings.concurrency)
        for d in bundle_dirs(sources):
            await certify_bundle(d, client, out / "lib", settings=settings, validator=validator)
    return out / "lib"


def measure(graphs: list[TaskGraph], index: WitnessIndex, libs: list[MCPLibrary]) -> dict[str, Any]:
    domain = {lib.mcp: lib.domain for lib in libs}
    multi = [g for g in graphs if len(g.mcps) > 1]
    witnesses = [index.graph(g) for g in graphs]
    multi_witnessed = sum(
        1
        for g, w in zip(graphs, witnesses, strict=True)
        if len(g.mcps) > 1 and w.mcp_pairs_witnessed
    )
    steps = sum(w.tool_steps for w in witnesses)
    steps_witnessed = sum(w.tool_steps_witnessed for w in witnesses)
    nodes = Counter(n.task.mcp for g in graphs for n in g.nodes)
    used = [nodes.get(lib.mcp, 0) for lib in libs]
    return {
        "composed": len(graphs),
        "multi_mcp": len(multi),
        "multi_mcp_with_witnessed_pair": multi_witnessed,
        "witnessed_pair_share": round(multi_witnessed / len(multi), 3) if multi else None,
        "mcp_pairs": sum(w.mcp_pairs for w in witnesses),
        "mcp_pairs_witnessed": sum(w.mcp_pairs_witnessed for w in witnesses),
        "tool_steps": steps,
        "tool_steps_witnessed": steps_witnessed,
        "tool_step_share": round(steps_witnessed / steps, 3) if steps else None,
        "mcps_covered": sum(1 for u in used if u),
        "mcps": len(libs),
        "domains_covered": len({domain[m] for m in nodes}),
        "domains": len(set(domain.values())),
        "nodes_per_mcp": dict(sorted(nodes.items())),
        "max_over_min_nodes": round(max(used) / min(used), 2) if used and min(used) else None,
    }


async def compose(
    libs: list[MCPLibrary], out: Path, n: int, seed: int, evidence: Path, on: bool
) -> tuple[list[TaskGraph], dict[str, Any]]:
    settings = TasksSettings(seed=seed, evidence=evidence, witnessed_ranking=on)
    async with megamcp_client(data_dir=out / ".megamcp") as client:
        composer = Composer(libs, client, out / "tasks", settings=settings)
        t0 = time.perf_counter()
        report = await composer.run(n)
        seconds = time.perf_counter() - t0
    return composer.accepted, {
        "rejections": report.rejections,
        "compose_seconds": round(seconds, 1),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out or tempfile.mkdtemp(prefix="weft-bench-witnessed-"))
    out.mkdir(parents=True, exist_ok=True)
    evidence = ExecutionEvidence.load(Path(args.evidence))
    lib_dir = (
        Path(args.libraries) if args.libraries else await certify(out, args.bundles, args.seed)
    )
    libs = load_library(lib_dir)
    index = WitnessIndex(evidence, {lib.mcp: lib.bundle.tools for lib in libs})
    result: dict[str, Any] = {
        "n": args.n,
        "seed": args.seed,
        "evidence": str(args.evidence),
        "evidence_source": evidence.source,
        "evidence_edges": len(evidence.edges),
        "resolved_tool_edges": len(index.tools),
        "resolved_mcp_pairs": sorted("+".join(sorted(p)) for p in index.pairs),
        "libraries": str(lib_dir),
    }
    for label, on in (("off", False), ("on", True)):
        graphs, extra = await compose(libs, out / label, args.n, args.seed, Path(args.evidence), on)
        result[label] = measure(graphs, index, libs) | extra
    rows = [
        ("composed", "composed"),
        ("multi-MCP tasks", "multi_mcp"),
        ("... with a witnessed MCP pair", "multi_mcp_with_witnessed_pair"),
        ("witnessed-pair share", "witnessed_pair_share"),
        ("adjacent tool steps", "tool_steps"),
        ("... witnessed", "tool_steps_witnessed"),
        ("witnessed-step share", "tool_step_share"),
        ("MCPs covered", "mcps_covered"),
        ("domains covered", "domains_covered"),
        ("most / least used MCP (nodes)", "max_over_min_nodes"),
        ("compose seconds", "compose_seconds"),
    ]
    summary_table(
        f"Witnessed ranking, {args.n} tasks, seed {args.seed} ({len(evidence.edges)} evidence "
        f"edges, {len(index.tools)} resolved to library tools)",
        ["figure", "switch off", "switch on"],
        [[name, result["off"][k], result["on"][k]] for name, k in rows],
    )
    summary_table(
        "Rejections",
        ["reason", "off", "on"],
        [
            [r, result["off"]["rejections"].get(r, 0), result["on"]["rejections"].get(r, 0)]
            for r in sorted(set(result["off"]["rejections"]) | set(result["on"]["rejections"]))
        ],
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=str))
        print(f"written: {args.json}")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evidence", required=True, help="ExecutionEvidence JSON file")
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--libraries", default=None, help="certified libraries (OUT/lib of a run)")
    ap.add_argument("--bundles", action="append", default=[], help="bundle folder (repeatable)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
