"""ReAct, Hermes and OpenClaw in their native loops, behind the capture gateway.

Runs the sample two-MCP task (3 atomic tasks, 3 tool calls, 3 checkpoints + final verification)
N times per harness through a real embedded MegaMCP host, with the scripted OpenAI-compatible
model server playing the reference solution (label: reference — it reads the answer key, so the
pass column checks the plumbing, not a policy). Prints per harness: rollouts run, rollouts that
verified, model calls captured (with token ids), merged calls, merge mismatches, and seconds per
rollout (wall time / rollouts at the given concurrency). Install the harnesses first:
`uv run weft-tasks harness install hermes openclaw`.

    uv run python benchmarks/harnesses/native_loops.py [--n 2] [--harness react hermes openclaw]
        [--concurrency 1] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from weft_core.console import set_quiet, summary_table
from weft_core.models import SnapshotRef

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "packages/weft-tasks/tests/rollout/data/sample_task.py"
MODEL = "weft-scripted"


def _sample() -> Any:
    spec = importlib.util.spec_from_file_location("bench_sample_task", SAMPLE)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


async def main(n: int, names: list[str], concurrency: int) -> list[dict[str, Any]]:
    from weft_megamcp.client import MegaMCPClient
    from weft_megamcp.host import MegaMCPHost
    from weft_megamcp.settings import MegaMCPSettings
    from weft_tasks.gateway import CaptureGateway, GatewayChatModels, capture_stats
    from weft_tasks.harness import ReActHarness
    from weft_tasks.harness.external import HermesHarness, OpenClawHarness, installed
    from weft_tasks.harness.external.settings import HarnessSettings
    from weft_tasks.rollout import (
        RolloutSettings,
        plan_rollouts,
        run_rollouts,
        trace_ledger_problems,
    )
    from weft_tasks.testing import ScriptedOpenAIServer, reference_replies

    sample = _sample()
    set_quiet(True)
    rows: list[dict[str, Any]] = []
    settings = HarnessSettings(timeout_s=600)
    with tempfile.TemporaryDirectory() as tmp:
        mm = MegaMCPSettings(data_dir=Path(tmp) / "megamcp", log_level="warning")
        async with (
            MegaMCPHost.running(mm) as host,
            MegaMCPClient(host.url, host.admin_token) as client,
        ):
            snaps = {}
            for mcp in ("crm", "helpdesk"):
                bundle = sample.build_bundle(mcp, Path(tmp) / "bundles")
                await client.register(bundle)
                snaps[mcp] = SnapshotRef(
                    mcp=mcp, uri=await client.put_snapshot(mcp, bundle / "seed.sqlite"), sha256=""
                )
            graph = sample.sample_graph(snaps)
            server = ScriptedOpenAIServer(reference_replies(graph), model=MODEL)
            async with server.running() as url:
                gateway = CaptureGateway(url)
                async with gateway.running():
                    for name in names:
                        if name != "react" and installed(name, settings.home) is None:
                            print(f"{name}: not installed (weft-tasks harness install {name})")
                            continue
                        harness: Any = (
                            ReActHarness(GatewayChatModels(gateway, MODEL))
                            if name == "react"
                            else {"hermes": HermesHarness, "openclaw": OpenClawHarness}[name](
                                gateway, MODEL, settings=settings
                            )
                        )
                        plans = plan_rollouts([graph], [("agentic", "full")], [name], samples=n)
                        t0 = time.perf_counter()
                        report = await run_rollouts(
                            plans,
                            client,
                            {name: harness},
                            settings=RolloutSettings(
                                concurrency=concurrency, progress=False, max_infra_retries=0
                            ),
                            gateway=gateway,
                        )
                        wall = time.perf_counter() - t0
                        traces = report.traces
                        verified = sum(
                            1
                            for t in traces
                            if t.error is None
                            and t.final is not None
                            and t.final.passed
                            and not trace_ledger_problems(t.messages, t.ledger)
                        )
                        [stats] = capture_stats(traces) or [None]
                        rows.append(
                            {
                                "harness": name,
                                "rollouts": len(traces),
                                "verified_reference": verified,
                                "calls": stats.calls if stats else 0,
                                "calls_with_ids": stats.calls_with_ids if stats else 0,
                                "merged": stats.merged if stats else 0,
                                "merge_mismatches": stats.mismatches if stats else 0,
                                "s_per_rollout": wall / max(1, len(traces)),
                                "errors": sorted(
                                    {(t.error or "")[:120] for t in traces if t.error}
                                ),
                            }
                        )
    return rows


def cli() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2, help="rollouts per harness")
    ap.add_argument("--harness", nargs="+", default=["react", "hermes", "openclaw"])
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    rows = asyncio.run(main(args.n, args.harness, args.concurrency))
    set_quiet(False)
    summary_table(
        f"Native harness loops behind the capture gateway (reference policy, concurrency {args.concurrency})",
        [
            "harness",
            "rollouts",
            "verified",
            "calls",
            "with ids",
            "merged",
            "mismatches",
            "s/rollout",
        ],
        [
            [
                r["harness"],
                r["rollouts"],
                r["verified_reference"],
                r["calls"],
                r["calls_with_ids"],
                r["merged"],
                r["merge_mismatches"],
                f"{r['s_per_rollout']:.1f}",
            ]
            for r in rows
        ],
    )
    for r in rows:
        for e in r["errors"]:
            print(f"{r['harness']}: {e}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    cli()
