"""Rollout throughput through a real embedded MegaMCP host.

Runs the sample two-MCP task (3 atomic tasks, 3 tool calls, 3 checkpoints + final verification)
with the reference-chain teacher and with ReAct on the reference policy, at several concurrency
levels, and prints a table: rollouts/s and mean seconds per rollout. Every trace is checked against
its ledger, so the numbers count only correct rollouts.

    uv run python benchmarks/rollouts/throughput.py [--n 24] [--concurrency 1 4 16]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import tempfile
import time
from pathlib import Path

from weft_core.console import set_quiet, summary_table
from weft_core.models import SnapshotRef

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "packages/weft-tasks/tests/rollout/data/sample_task.py"


def _sample():
    spec = importlib.util.spec_from_file_location("bench_sample_task", SAMPLE)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


async def main(n: int, levels: list[int]) -> None:
    from weft_megamcp.client import MegaMCPClient
    from weft_megamcp.host import MegaMCPHost
    from weft_megamcp.settings import MegaMCPSettings
    from weft_tasks.harness import ReActHarness, ReferenceChainTeacher, reference_policy
    from weft_tasks.rollout import (
        RolloutSettings,
        plan_rollouts,
        run_rollouts,
        trace_ledger_problems,
    )

    sample = _sample()
    set_quiet(True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = MegaMCPSettings(data_dir=Path(tmp) / "megamcp", log_level="warning")
        async with (
            MegaMCPHost.running(settings) as host,
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
            harnesses = {
                "teacher": ReferenceChainTeacher(),
                "react": ReActHarness(reference_policy),
            }
            for view in ("simuser/partial", "agentic/full"):
                for harness in harnesses:
                    for level in levels:
                        mode, disclosure = view.split("/")
                        plans = plan_rollouts([graph], [(mode, disclosure)], [harness], samples=n)
                        t0 = time.perf_counter()
                        report = await run_rollouts(
                            plans,
                            client,
                            harnesses,
                            settings=RolloutSettings(concurrency=level, progress=False),
                        )
                        wall = time.perf_counter() - t0
                        ok = [
                            t
                            for t in report.traces
                            if t.error is None
                            and t.final
                            and t.final.passed
                            and not trace_ledger_problems(t.messages, t.ledger)
                        ]
                        rows.append(
                            [
                                view,
                                harness,
                                level,
                                len(report.traces),
                                len(ok),
                                f"{wall:.1f}",
                                f"{len(ok) / wall:.2f}",
                                f"{wall * level / max(1, len(ok)):.2f}",
                            ]
                        )
    set_quiet(False)
    summary_table(
        "Rollout throughput (sample task: 2 MCPs, 3 atomic tasks, 3 calls; agentic adds a ledger-replay group)",
        [
            "view",
            "harness",
            "concurrency",
            "rollouts",
            "verified",
            "wall s",
            "rollouts/s",
            "s per rollout",
        ],
        rows,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=24)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    asyncio.run(main(args.n, args.concurrency))
