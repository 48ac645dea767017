"""MegaMCP vs sandbox-local serving on identical task traces (paper App. D), side by side.

    uv run python benchmarks/megamcp/run.py                 # full run (1,000 concurrent sessions)
    uv run python benchmarks/megamcp/run.py --quick         # a smoke run in about a minute

Prints one rich table and writes the figures as JSON (--out). See README.md for what each
figure measures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fastmcp import Client
from harness import LocalServing, MegaServing, TaskResult, run_calls, tree_memory
from rich.console import Console
from rich.table import Table
from traces import build_bundle, make_trace

MiB = 1 << 20
console = Console(stderr=True)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def summarize(results: list[TaskResult]) -> dict[str, Any]:
    lat = [x for r in results for x in r.latencies_ms]
    firsts = [r.first_call_s for r in results if r.first_call_s is not None]
    failures = [r.failure for r in results if r.failure]
    return {
        "tasks": len(results),
        "completed": sum(r.ok for r in results),
        "calls": sum(r.calls for r in results),
        "tool_errors": sum(r.errors for r in results),
        "p50_ms": pct(lat, 0.5),
        "p99_ms": pct(lat, 0.99),
        "median_first_call_s": statistics.median(firsts) if firsts else None,
        "failures": failures,
    }


async def cold_first_call(
    side: Any, tasks: int, calls: int, rows: int, offset: int
) -> dict[str, Any]:
    results, shipped = [], []
    for i in range(tasks):
        res, n = await side.lifecycle(offset + i, make_trace(offset + i, calls, rows))
        results.append(res)
        shipped.append(n)
    out = summarize(results)
    out["bytes_per_task"] = statistics.mean(shipped)
    return out


async def concurrent(side: Any, tasks: int, calls: int, rows: int, offset: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    pairs = await asyncio.gather(
        *(side.lifecycle(offset + i, make_trace(offset + i, calls, rows)) for i in range(tasks))
    )
    out = summarize([r for r, _ in pairs])
    out["wall_s"] = time.perf_counter() - t0
    out["bytes_total"] = sum(n for _, n in pairs)
    return out


async def mega_memory(mega: MegaServing, sessions: int) -> dict[str, Any]:
    """Resident memory of the host with `sessions` live sessions, each after one call."""
    base_rss, base_pss = tree_memory([mega.pid])
    assert mega.client is not None
    groups = [await mega.open_group() for _ in range(sessions)]
    for g in groups:
        async with mega.client.session_client(g.session(mega.mcp_id)) as c:
            await c.call_tool("read_note", {"path": "/none"}, raise_on_error=False)
    await asyncio.sleep(0.5)
    rss, pss = tree_memory([mega.pid])
    for g in groups:
        await mega.client.close(g)
    return {
        "sessions": sessions,
        "rss": rss,
        "pss": pss,
        "idle_rss": base_rss,
        "idle_pss": base_pss,
    }


async def local_fleet(
    local: LocalServing, n: int, calls: int, rows: int, concurrency: int
) -> dict[str, Any]:
    """Start n prewarmed one-session servers; measure memory of 50 and of all n; then run a
    concurrent round of task traces on them (one task per server)."""
    sem = asyncio.Semaphore(4)  # starting 50 interpreters at once on 2 cores only thrashes

    async def start(i: int) -> tuple[Any, str, Path]:
        async with sem:
            box, _ = local.ship(50_000 + i, make_trace(50_000 + i, calls, rows))
            proc, url = await local.start(box)
            async with Client(url) as c:
                await c.call_tool("read_note", {"path": "/none"}, raise_on_error=False)
            return proc, url, box

    fleet = await asyncio.gather(*(start(i) for i in range(n)))
    await asyncio.sleep(0.5)
    pids = [p.pid for p, _, _ in fleet]
    rss50, pss50 = tree_memory(pids[:50])
    rss_all, pss_all = tree_memory(pids)

    async def task(i: int) -> TaskResult:
        res = TaskResult(ok=False)
        t0 = time.perf_counter()
        try:
            async with Client(fleet[i][1]) as c:
                await run_calls(c, make_trace(60_000 + i, calls, rows), res, t0)
            res.ok = True
        except Exception as exc:
            res.failure = f"{type(exc).__name__}: {exc}"
        return res

    t0 = time.perf_counter()
    rollout = summarize(list(await asyncio.gather(*(task(i) for i in range(min(concurrency, n))))))
    rollout["wall_s"] = time.perf_counter() - t0
    await asyncio.gather(*(local.stop(p, box) for p, _, box in fleet))
    return {
        "rss50": rss50,
        "pss50": pss50,
        "rss_all": rss_all,
        "pss_all": pss_all,
        "n": n,
        "rollout": rollout,
        "per_process_rss": rss_all / n,
    }


def change(a: float | None, b: float | None) -> str:
    if not a or b is None:
        return "—"
    return f"{(b - a) / a * 100:+.1f}%"


def render(r: dict[str, Any]) -> Table:
    t = Table(title=f"MegaMCP vs sandbox-local serving ({r['machine']})")
    for col in ("metric", "sandbox-local", "MegaMCP", "change", "paper", "goal"):
        t.add_column(col, justify="right" if col not in ("metric",) else "left")
    lc, mc = r["local_cold"], r["mega_cold"]
    bl, bm = lc["bytes_per_task"], mc["bytes_per_task"]
    t.add_row(
        "bytes shipped / task",
        f"{bl / 1024:.1f} KiB",
        f"{bm / 1024:.2f} KiB",
        change(bl, bm),
        "773.5→34.8 MiB @1k (−95.5%)",
        "−99%",
    )
    t.add_row(
        "bytes shipped @1,000 tasks",
        f"{bl * 1000 / MiB:.1f} MiB",
        f"{bm * 1000 / MiB:.2f} MiB",
        change(bl, bm),
        "",
        "",
    )
    ml, mm = r["local_fleet"], r["mega_mem50"]
    t.add_row(
        "RSS, 50 sessions (50 procs vs 1)",
        f"{ml['rss50'] / MiB:.0f} MiB",
        f"{mm['rss'] / MiB:.0f} MiB",
        change(ml["rss50"], mm["rss"]),
        "−95.7%",
        "−97%",
    )
    t.add_row(
        "PSS, 50 sessions",
        f"{ml['pss50'] / MiB:.0f} MiB",
        f"{mm['pss'] / MiB:.0f} MiB",
        change(ml["pss50"], mm["pss"]),
        "",
        "",
    )
    m52 = r.get("mega_mem52")
    if m52:
        local52_rss = ml["rss_all"] if ml["n"] >= 52 else None
        local52_pss = ml["pss_all"] if ml["n"] >= 52 else None
        t.add_row(
            "RSS, 52 sessions (52 procs vs 8)",
            f"{(local52_rss or 0) / MiB:.0f} MiB",
            f"{m52['rss'] / MiB:.0f} MiB",
            change(local52_rss, m52["rss"]),
            "−77.6%",
            "",
        )
        t.add_row(
            "PSS, 52 sessions (52 procs vs 8)",
            f"{(local52_pss or 0) / MiB:.0f} MiB",
            f"{m52['pss'] / MiB:.0f} MiB",
            change(local52_pss, m52["pss"]),
            "",
            "",
        )
    fl, fm = lc["median_first_call_s"], mc["median_first_call_s"]
    t.add_row(
        "median cold time to 1st call",
        f"{fl:.3f} s",
        f"{fm:.3f} s",
        change(fl, fm),
        "10.455→4.794 s (−54.1%)",
        "−90%",
    )
    t.add_row("MegaMCP host start + register", "—", f"{r['mega_start_s']:.2f} s", "", "", "")
    ro, lr = r["mega_rollout"], ml["rollout"]
    t.add_row(
        "concurrent sessions",
        f"{lr['tasks']} (prewarmed)",
        f"{ro['tasks']} (cold groups)",
        "",
        "1,000 in flight",
        "1,000",
    )
    t.add_row(
        "completed lifecycles",
        f"{lr['completed']}/{lr['tasks']}",
        f"{ro['completed']}/{ro['tasks']}",
        "",
        "all 4,000",
        "all",
    )
    t.add_row("calls completed", f"{lr['calls']}", f"{ro['calls']}", "", "39,864", "")
    t.add_row("p50 call latency", f"{lr['p50_ms']:.1f} ms", f"{ro['p50_ms']:.1f} ms", "", "", "")
    t.add_row("p99 call latency", f"{lr['p99_ms']:.1f} ms", f"{ro['p99_ms']:.1f} ms", "", "", "")
    t.add_row("rollout wall time", f"{lr['wall_s']:.1f} s", f"{ro['wall_s']:.1f} s", "", "", "")
    est = ml["per_process_rss"] * ro["tasks"] / (1 << 30)  # what one process per session would need
    t.add_row(
        f"local at {ro['tasks']} concurrent",
        f"not run (~{est:.1f} GiB RSS)",
        "run",
        "",
        "",
        "",
    )
    return t


async def main(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="weft-bench-megamcp-"))
    bundle = build_bundle(root / "bundle", args.seed_rows)
    local = LocalServing(bundle, root / "local")
    mega = MegaServing(bundle, root / "mega", workers=0)
    r: dict[str, Any] = {
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "args": vars(args),
        "seed_db_bytes": (bundle / "seed.sqlite").stat().st_size,
    }
    console.log(
        f"seed DB {r['seed_db_bytes'] / 1024:.0f} KiB; cold phase, local ({args.cold_tasks} tasks)"
    )
    r["local_cold"] = await cold_first_call(local, args.cold_tasks, args.calls, args.seed_rows, 0)
    console.log("cold phase, MegaMCP")
    r["mega_start_s"] = await mega.start()
    try:
        r["mega_cold"] = await cold_first_call(mega, args.cold_tasks, args.calls, args.seed_rows, 0)
        console.log("memory, MegaMCP, 50 sessions in 1 process")
        r["mega_mem50"] = await mega_memory(mega, 50)
        console.log(f"rollout, MegaMCP, {args.sessions} concurrent sessions")
        r["mega_rollout"] = await concurrent(
            mega, args.sessions, args.calls, args.seed_rows, 10_000
        )
    finally:
        await mega.stop()
    if args.workers > 1:
        console.log(f"memory, MegaMCP, 52 sessions in {args.workers} worker processes")
        mega8 = MegaServing(bundle, root / "mega8", workers=args.workers)
        await mega8.start()
        try:
            r["mega_mem52"] = await mega_memory(mega8, 52)
        finally:
            await mega8.stop()
    console.log(f"memory + rollout, local, {args.local_fleet} prewarmed one-session processes")
    r["local_fleet"] = await local_fleet(
        local, args.local_fleet, args.calls, args.seed_rows, args.local_fleet
    )
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    return r


def cli() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=1000, help="concurrent MegaMCP sessions")
    p.add_argument("--calls", type=int, default=10, help="planned calls per task")
    p.add_argument(
        "--cold-tasks", type=int, default=10, help="tasks for the cold first-call median"
    )
    p.add_argument("--seed-rows", type=int, default=2000, help="rows in the initialized DB")
    p.add_argument("--local-fleet", type=int, default=52, help="one-session local processes")
    p.add_argument("--workers", type=int, default=8, help="prefork workers for the 52-session run")
    p.add_argument("--quick", action="store_true", help="small smoke run")
    p.add_argument("--out", type=Path, default=Path(__file__).with_name("last_run.json"))
    args = p.parse_args()
    if args.quick:
        args.sessions, args.cold_tasks, args.local_fleet, args.calls = 50, 3, 52, 4
    r = asyncio.run(main(args))
    args.out.write_text(json.dumps(r, indent=2, default=str))
    Console(width=150).print(render(r))
    console.log(f"figures written to {args.out}")


if __name__ == "__main__":
    cli()
