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
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psutil
from fastmcp import Client
from harness import LocalServing, MegaServing, TaskResult, run_calls, tree_memory
from loadgen import AdminAPI, Lifecycle, MCPSession, run_trace
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
    processes = await mega.worker_processes()
    for g in groups:
        await mega.client.close(g)
    return {
        "sessions": sessions,
        "worker_processes": processes,
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


class _Sampler:
    """Peak RSS (sum over the server's process tree) while a phase runs, and the CPU each process
    of the tree had used when last seen.

    A process that exits during the phase (the registration probe's zygote leaves ~20 s after a
    host starts, with ~1.4 s of CPU) is no longer in the tree at the end, and reading the tree
    twice made its CPU drop out of the difference: up to 1.4 ms per call at 100 sessions. Its
    last sample (at most 0.5 s old, and such a process idles before it exits) keeps it."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.peak_rss = 0
        self.cpu_start = tree_cpu_by_pid(pids)
        self._cpu_seen = dict(self.cpu_start)
        self._task: asyncio.Task[None] | None = None

    async def _loop(self) -> None:
        while True:
            rss, _ = await asyncio.to_thread(tree_memory, self.pids)
            self.peak_rss = max(self.peak_rss, rss)
            self._cpu_seen |= await asyncio.to_thread(tree_cpu_by_pid, self.pids)
            await asyncio.sleep(0.5)

    def cpu_used(self) -> float:
        """CPU seconds the tree used since the sampler was made, exited processes included."""
        seen = self._cpu_seen | tree_cpu_by_pid(self.pids)
        return sum(cpu - self.cpu_start.get(pid, 0.0) for pid, cpu in seen.items())

    def __enter__(self) -> _Sampler:
        self._task = asyncio.get_running_loop().create_task(self._loop())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def tree_cpu_by_pid(pids: list[int]) -> dict[int, float]:
    """User + system CPU seconds of each of the processes and their live descendants."""
    out: dict[int, float] = {}
    for pid in pids:
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for p in procs:
            try:
                t = p.cpu_times()
            except psutil.NoSuchProcess:
                continue
            out[p.pid] = t.user + t.system
    return out


async def _bare_lifecycle(url: str, trace: list[Any]) -> Lifecycle:
    out = Lifecycle()
    session = MCPSession(url, None)
    try:
        await run_trace(session, trace, out)
        out.ok = True
    except Exception as exc:
        out.failure = f"calls: {type(exc).__name__}: {exc}"
    finally:
        await session.close()
    return out


async def _mega_lifecycle(url: str, token: str, mcp_id: str, trace: list[Any]) -> Lifecycle:
    """Create a group, run the trace on its session, close the group: raw HTTP throughout."""
    out = Lifecycle()
    admin = AdminAPI(url, token)
    phase = "create_group"
    gid = None
    session = None
    try:
        handle = await admin.post("/admin/groups", {"mcps": {mcp_id: None}})
        gid = handle["group_id"]
        info = handle["sessions"][mcp_id]
        phase = "calls"
        same = info["url"].startswith(url.rstrip("/") + "/")
        session = MCPSession(info["url"], info["token"], conn=admin.conn if same else None)
        await run_trace(session, trace, out)
        out.ok = True
    except Exception as exc:
        out.failure = f"{phase}: {type(exc).__name__}: {exc}"
    finally:
        if gid is not None:
            try:
                await admin.post(f"/admin/groups/{gid}/close")
            except Exception as exc:
                out.ok = False
                out.failure = f"close: {type(exc).__name__}: {exc}"
        if session is not None:
            await session.close()
        await admin.close()
    return out


async def concurrency_phase(
    kind: str, pids: list[int], make: Any, n: int, calls: int, rows: int, offset: int
) -> dict[str, Any]:
    """n lifecycles at once; calls/s over the phase, latency over every call, server CPU/call."""
    traces = [make_trace(offset + i, calls, rows) for i in range(n)]
    own0 = time.process_time()
    t0 = time.perf_counter()
    with _Sampler(pids) as sampler:
        results = await asyncio.gather(*(make(t) for t in traces))
    wall = time.perf_counter() - t0
    cpu = sampler.cpu_used()
    own = time.process_time() - own0
    lat = [x for r in results for x in r.latencies_ms]
    ncalls = len(lat)
    return {
        "kind": kind,
        "sessions": n,
        "completed": sum(r.ok for r in results),
        "calls": ncalls,
        "tool_errors": sum(r.errors for r in results),
        "wall_s": wall,
        "calls_per_s": ncalls / wall if wall else None,
        "p50_ms": pct(lat, 0.5),
        "p99_ms": pct(lat, 0.99),
        "server_cpu_ms_per_call": cpu / ncalls * 1000 if ncalls else None,
        "loadgen_cpu_share": own / wall if wall else None,
        "peak_rss": sampler.peak_rss,
        "failures": sorted({r.failure for r in results if r.failure})[:5],
    }


async def sequential_phase(
    sessions: list[MCPSession], calls: int, rows: int
) -> list[dict[str, Any]]:
    """One session per server, calls one after another: the latency a single agent sees.

    The servers take the same calls interleaved (one call in flight at a time, which server goes
    first alternating), so the machine's drift over the phase falls on all of them alike."""
    trace = [c for i in range(max(1, calls // 10)) for c in make_trace(90_000 + i, 10, rows)]
    for session in sessions:
        await run_trace(session, trace[:5], Lifecycle())  # warm the connection and the server
    outs = [Lifecycle() for _ in sessions]
    for i, call in enumerate(trace):
        order = range(len(sessions)) if i % 2 == 0 else reversed(range(len(sessions)))
        for k in order:
            await run_trace(sessions[k], [call], outs[k])
    for session in sessions:
        await session.close()
    return [
        {
            "calls": len(out.latencies_ms),
            "p50_ms": pct(out.latencies_ms, 0.5),
            "p99_ms": pct(out.latencies_ms, 0.99),
            "errors": out.errors,
        }
        for out in outs
    ]


async def concurrency(args: argparse.Namespace, bundle: Path, root: Path) -> dict[str, Any]:
    """Bare FastMCP (one process, one shared DB) vs MegaMCP (1 process) vs MegaMCP (N workers),
    the same traces at each concurrency level, all in this run.

    All servers are up for the whole phase (an idle MegaMCP host costs under 1% of a core) and
    each level runs on every server back to back, the order reversed from one level to the next,
    so the rows a goal compares are measured close together (1.8 minutes between the bare and
    2-worker 1,000-session rows, against 2.7 with all of one server's levels in turn): this
    machine's speed drifts, by 15% between two runs 23 minutes apart in session 28. Each level
    runs `--repeats` times on every server (the order reversing each round), so a goal reads the
    median of as many ratios of rows measured side by side, not one draw of that drift."""
    sizes = [int(x) for x in args.concurrency.split(",") if x]
    out: dict[str, Any] = {"sizes": sizes, "rows": []}
    local = LocalServing(bundle, root / "bare")
    box, _ = local.ship(0, [])
    proc, bare_url = await local.start(box)
    megas: list[MegaServing] = []
    try:
        console.log("sequential latency, bare FastMCP and MegaMCP (1 process), interleaved")
        mega = MegaServing(bundle, root / "seq-w0")
        await mega.start()
        try:
            group = await mega.open_group()
            info = group.session(mega.mcp_id)
            out["seq_bare"], out["seq_mega"] = await sequential_phase(
                [MCPSession(bare_url, None), MCPSession(info.url, info.token)],
                args.seq_calls,
                args.seed_rows,
            )
        finally:
            await mega.stop()
        servers: list[tuple[str, list[int], Any, int]] = [
            ("bare FastMCP", [proc.pid], lambda t: _bare_lifecycle(bare_url, t), 20_000)
        ]
        for workers in sorted({0, args.conc_workers} - {1}):
            mega = MegaServing(bundle, root / f"conc-w{workers}", workers=workers)
            await mega.start()
            megas.append(mega)
            servers.append(_mega_server(mega, workers))
        rounds = [(n, rep) for n in sizes for rep in range(args.repeats)]
        for k, (n, rep) in enumerate(rounds):
            for kind, pids, make, offset in servers if k % 2 == 0 else servers[::-1]:
                console.log(f"concurrency {n}, {kind}, repeat {rep + 1}/{args.repeats}")
                row = await concurrency_phase(
                    kind, pids, make, n, args.calls, args.seed_rows, offset
                )
                row["repeat"] = rep
                out["rows"].append(row)
    finally:
        for mega in megas:
            await mega.stop()
        await local.stop(proc, box)
    kinds = [kind for kind, *_ in servers]
    out["rows"].sort(key=lambda r: (kinds.index(r["kind"]), r["sessions"], r["repeat"]))
    return out


def _mega_server(mega: MegaServing, workers: int) -> tuple[str, list[int], Any, int]:
    """A started MegaMCP host as a row of the concurrency phase: label, pids, lifecycle, offset."""
    label = "MegaMCP, 1 process" if workers == 0 else f"MegaMCP, {workers} workers"
    assert mega.host is not None
    url, token = mega.host.url, mega.host.admin_token

    async def lifecycle(trace: list[Any]) -> Lifecycle:
        return await _mega_lifecycle(url, token, mega.mcp_id, trace)

    return label, [mega.pid], lifecycle, 30_000 + 10_000 * workers


MUTATING = {"add_contact", "update_email", "write_note", "delete_contact"}


def parse_policies(text: str) -> list[tuple[float, int]]:
    """`--policies` entries: `INTERVAL` or `INTERVAL:MAX_PATCHES` (patches default 16)."""
    out = []
    for item in (x.strip() for x in text.split(",")):
        if item:
            interval, _, patches = item.partition(":")
            out.append((float(interval), int(patches or 16)))
    return out


def journal_patches(ckpt_dir: Path) -> list[int]:
    """Sizes of the page patches a local checkpoint store holds: each is in the journal record
    of the checkpoint that wrote it (whole DB copies are files)."""
    from weft_megamcp.checkpoints.journal import parse_blob_key, records

    sizes = []
    for journal in ckpt_dir.rglob("g*/JOURNAL"):
        for record in records(str(journal)):
            patches = json.loads(record.manifest).get("db_patches") or []
            where = parse_blob_key(patches[-1]["key"]) if patches else None
            if where is not None and record.start <= where[1] < record.end:
                sizes.append(patches[-1]["size"])
    return sizes


async def policy_phase(
    args: argparse.Namespace, bundle: Path, root: Path, min_interval_s: float, max_patches: int
) -> dict[str, Any]:
    """Cost and loss of one checkpoint policy: n sessions run their traces at once (groups left
    open), the host is killed (-9) the moment the last call returns and restarted on the same
    data dir; every acknowledged write the resumed sessions lack is lost."""
    import os
    import secrets

    from weft_megamcp import MegaMCPClient, MegaMCPHost, MegaMCPSettings

    n = args.policy_sessions
    env = {
        "WEFT_MEGAMCP_CHECKPOINT_MIN_INTERVAL_S": str(min_interval_s),
        "WEFT_MEGAMCP_CHECKPOINT_MAX_PATCHES": str(max_patches),
    }
    os.environ.update(env)
    settings = MegaMCPSettings(
        data_dir=root / f"policy-{min_interval_s:g}-{max_patches}",
        admin_token=secrets.token_urlsafe(24),
        offload_after_s=3600,
    )
    try:
        host = await MegaMCPHost.start(settings, subprocess=True)
    finally:
        for key in env:
            del os.environ[key]
    async with MegaMCPClient(host.url, host.admin_token) as client:
        mcp_id = (await client.register(bundle, name="bench_crm")).mcp_id
        groups = [await client.create_group({mcp_id: None}) for _ in range(n)]
    acked = [0] * n

    async def work(i: int) -> list[float]:
        info = groups[i].session(mcp_id)
        session = MCPSession(info.url, info.token)
        lat = []
        try:
            for k, (tool, a) in enumerate(make_trace(70_000 + i, args.calls, args.seed_rows)):
                if k:
                    await asyncio.sleep(args.policy_think_s)
                t0 = time.perf_counter()
                err = await session.call(tool, a)
                lat.append((time.perf_counter() - t0) * 1000)
                acked[i] += int(tool in MUTATING and not err)
        finally:
            await session.close()
        return lat

    assert host.pid is not None
    t0 = time.perf_counter()
    with _Sampler([host.pid]) as sampler:
        lats = await asyncio.gather(*(work(i) for i in range(n)))
    wall = time.perf_counter() - t0
    cpu = sampler.cpu_used()
    assert host._proc is not None
    host._proc.kill()  # the instant the last write was acknowledged
    host._proc.wait()
    ckpt_dir = settings.data_dir / "objects" / "checkpoints"
    full = [f.stat().st_size for f in ckpt_dir.rglob("g*/*.sqlite")]
    patches = journal_patches(ckpt_dir)
    # The same kill, but the machine's local session files are gone too (a lost disk, a new
    # machine): the sessions can only resume from their checkpoints, so this is what the
    # policy's durability window loses. Taken on a copy of the data dir before any restart.
    disk_lost = settings.model_copy(
        update={"data_dir": settings.data_dir.with_name(settings.data_dir.name + "-disk-lost")}
    )
    shutil.copytree(settings.data_dir, disk_lost.data_dir, symlinks=True)
    for db in (disk_lost.data_dir / "groups").rglob("state.sqlite"):
        shutil.rmtree(db.parent / "workspace", ignore_errors=True)
        for f in db.parent.glob("state.sqlite*"):
            f.unlink()

    async def resumed_versions(s: MegaMCPSettings) -> list[int]:
        host = await MegaMCPHost.start(s, subprocess=True)
        try:
            async with MegaMCPClient(host.url, host.admin_token) as client:
                return [(await client.info(g)).sessions[mcp_id]["state_version"] for g in groups]
        finally:
            await host.stop()

    restored = await resumed_versions(settings)
    from_checkpoints = await resumed_versions(disk_lost)
    lost = [max(0, a - r) for a, r in zip(acked, restored, strict=True)]
    lost_disk = [max(0, a - r) for a, r in zip(acked, from_checkpoints, strict=True)]
    calls = sum(len(x) for x in lats)
    return {
        "min_interval_s": min_interval_s,
        "max_patches": max_patches,
        "sessions": n,
        "calls": calls,
        "calls_per_s": calls / wall,
        "server_cpu_ms_per_call": cpu / calls * 1000,
        "checkpoints": len(full) + len(patches),
        "full_copies": len(full),
        "page_patches": len(patches),
        "checkpoint_bytes": sum(full) + sum(patches),
        "acked_writes": sum(acked),
        "lost_writes": sum(lost),
        "sessions_losing": sum(1 for x in lost if x),
        "lost_writes_disk_lost": sum(lost_disk),
        "sessions_losing_disk_lost": sum(1 for x in lost_disk if x),
        "p50_ms": pct([x for y in lats for x in y], 0.5),
    }


def render_policies(rows: list[dict[str, Any]]) -> Table:
    t = Table(title="Checkpoint policy: cost and loss on kill -9 (MegaMCP, 1 process)")
    for col in (
        "min interval",
        "max patches",
        "sessions",
        "calls/s",
        "CPU/call",
        "DB checkpoints (full + patch)",
        "KiB uploaded / checkpoint",
        "acked writes",
        "lost on kill -9",
        "lost on kill -9 + local disk (sessions)",
    ):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(
            f"{r['min_interval_s']:g} s",
            str(r["max_patches"]),
            str(r["sessions"]),
            f"{r['calls_per_s']:.0f}",
            f"{r['server_cpu_ms_per_call']:.2f} ms",
            f"{r['checkpoints']} ({r['full_copies']} + {r['page_patches']})",
            f"{r['checkpoint_bytes'] / max(1, r['checkpoints']) / 1024:.1f}",
            str(r["acked_writes"]),
            str(r["lost_writes"]),
            f"{r['lost_writes_disk_lost']} ({r['sessions_losing_disk_lost']})",
        )
    return t


def render_concurrency(c: dict[str, Any]) -> Table:
    t = Table(title="Concurrent lifecycles (same traces; bare FastMCP = one process, one DB)")
    for col in (
        "server",
        "sessions",
        "round",
        "completed",
        "calls/s",
        "p50",
        "p99",
        "CPU/call",
        "server cores busy",
        "peak RSS",
        "loadgen CPU",
    ):
        t.add_column(col, justify="left" if col == "server" else "right")
    for r in c["rows"]:
        t.add_row(
            r["kind"],
            str(r["sessions"]),
            str(r["repeat"] + 1),
            f"{r['completed']}/{r['sessions']}",
            f"{r['calls_per_s']:.0f}",
            f"{r['p50_ms']:.1f} ms",
            f"{r['p99_ms']:.1f} ms",
            f"{r['server_cpu_ms_per_call']:.2f} ms",
            # calls/s x CPU per call: how much of the machine's 2 cores the server kept busy,
            # which bounds what more processes can add
            f"{r['calls_per_s'] * r['server_cpu_ms_per_call'] / 1000:.2f}",
            f"{r['peak_rss'] / MiB:.0f} MiB",
            f"{r['loadgen_cpu_share'] * 100:.0f}%",
        )
    sb, sm = c.get("seq_bare"), c.get("seq_mega")
    if sb and sm:
        t.caption = (
            f"sequential call p50: bare {sb['p50_ms']:.2f} ms, MegaMCP {sm['p50_ms']:.2f} ms "
            f"({sm['p50_ms'] / sb['p50_ms']:.2f}x); p99 {sb['p99_ms']:.2f} / {sm['p99_ms']:.2f} ms"
        )
    return t


def _ratios(num: list[dict[str, Any]], den: list[dict[str, Any]], key: str) -> list[float]:
    """num/den of `key` for each repeat both rows have (rows of one repeat ran side by side)."""
    by_rep = {r["repeat"]: r for r in den}
    return [r[key] / by_rep[r["repeat"]][key] for r in num if r["repeat"] in by_rep]


def _ratio_text(ratios: list[float]) -> str:
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}x"
    each = ", ".join(f"{x:.2f}" for x in ratios)
    return f"{statistics.median(ratios):.2f}x (median of {each})"


def targets(c: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """The issue's goals, computed from this run's rows: with repeats, each ratio is the median
    of the ratios of the rows measured side by side in one round."""
    out = []
    sb, sm = c.get("seq_bare"), c.get("seq_mega")
    if sb and sm:
        ratio = sm["p50_ms"] / sb["p50_ms"]
        out.append(("sequential latency <= 1.3x bare", f"{ratio:.2f}x", ratio <= 1.3))
    n = max(c["sizes"]) if c["sizes"] else 0
    by: dict[str, list[dict[str, Any]]] = {}
    for r in c["rows"]:
        if r["sessions"] == n:
            by.setdefault(r["kind"], []).append(r)
    bare = by.get("bare FastMCP", [])
    one = by.get("MegaMCP, 1 process", [])
    multi = next((rows for k, rows in by.items() if "workers" in k), [])
    candidates = [rows for rows in (one, multi) if rows]
    best = max(
        candidates, key=lambda rows: statistics.median([r["calls_per_s"] for r in rows]), default=[]
    )
    if bare and best:
        kind = best[0]["kind"]
        done = min(r["completed"] for r in best)
        out.append(
            (
                f"all {n} lifecycles complete ({kind}, every repeat)",
                f"{done}/{n}",
                all(r["completed"] == n for r in best),
            )
        )
        tp = _ratios(best, bare, "calls_per_s")
        out.append(
            (
                f"throughput @{n} >= 1.5x bare ({kind})",
                _ratio_text(tp),
                statistics.median(tp) >= 1.5,
            )
        )
        p99 = _ratios(best, bare, "p99_ms")
        out.append(
            (f"p99 @{n} <= 2x bare p99 ({kind})", _ratio_text(p99), statistics.median(p99) <= 2)
        )
    if one and multi:
        r = _ratios(multi, one, "calls_per_s")
        out.append(
            (f"{multi[0]['kind']} >= 1.6x one process", _ratio_text(r), statistics.median(r) >= 1.6)
        )
    return out


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
    for key, how in (("mega_mem52", "packed"), ("mega_mem52_spread", "spread")):
        m52 = r.get(key)
        if not m52:
            continue
        local52_rss = ml["rss_all"] if ml["n"] >= 52 else None
        local52_pss = ml["pss_all"] if ml["n"] >= 52 else None
        procs = m52.get("worker_processes", "?")
        t.add_row(
            f"RSS, 52 sessions (52 procs vs {procs} workers, {how})",
            f"{(local52_rss or 0) / MiB:.0f} MiB",
            f"{m52['rss'] / MiB:.0f} MiB",
            change(local52_rss, m52["rss"]),
            "−77.6% (8 procs)",
            "−90%",
        )
        t.add_row(
            f"PSS, 52 sessions (52 procs vs {procs} workers, {how})",
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
        "−97%",
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
    r: dict[str, Any] = {
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "seed_db_bytes": (bundle / "seed.sqlite").stat().st_size,
        "load_average_at_start": list(__import__("os").getloadavg()),
    }
    phases = set(args.phases.split(","))
    if "concurrency" in phases:
        r["concurrency"] = await concurrency(args, bundle, root)
        r["targets"] = targets(r["concurrency"])
    if "policies" in phases:
        r["policies"] = []
        for interval, patches in parse_policies(args.policies):
            console.log(f"checkpoint policy: min interval {interval:g} s, max patches {patches}")
            r["policies"].append(await policy_phase(args, bundle, root, interval, patches))
    if "appd" in phases:
        await app_d(args, bundle, root, r)
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    return r


async def app_d(args: argparse.Namespace, bundle: Path, root: Path, r: dict[str, Any]) -> None:
    local = LocalServing(bundle, root / "local")
    mega = MegaServing(bundle, root / "mega", workers=0)
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
        console.log(f"rollout, MegaMCP, {args.sessions} concurrent sessions (fastmcp clients)")
        r["mega_rollout"] = await concurrent(
            mega, args.sessions, args.calls, args.seed_rows, 10_000
        )
    finally:
        await mega.stop()
    if args.workers > 1:
        # Packed (the default placement: another worker only when the running ones are full or
        # busy) and spread (worker_pack_sessions=1: one new worker per group up to --workers,
        # the paper's 8-process configuration), side by side.
        for key, pack in (("mega_mem52", None), ("mega_mem52_spread", 1)):
            how = "packed" if pack is None else "spread"
            console.log(f"memory, MegaMCP, 52 sessions, up to {args.workers} workers, {how}")
            mega8 = MegaServing(bundle, root / f"mega8-{how}", workers=args.workers, pack=pack)
            await mega8.start()
            try:
                r[key] = await mega_memory(mega8, 52)
            finally:
                await mega8.stop()
    console.log(f"memory + rollout, local, {args.local_fleet} prewarmed one-session processes")
    r["local_fleet"] = await local_fleet(
        local, args.local_fleet, args.calls, args.seed_rows, args.local_fleet
    )


def cli() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--phases",
        default="concurrency,policies,appd",
        help="comma list: concurrency (bare FastMCP vs MegaMCP table), policies (checkpoint "
        "cost and loss), appd (paper App. D rows)",
    )
    p.add_argument(
        "--policies",
        default="0:0,0:16,5:16",
        help="checkpoint policies to compare: INTERVAL[:MAX_PATCHES] (checkpoint_min_interval_s "
        "and checkpoint_max_patches; patches default 16)",
    )
    p.add_argument("--policy-sessions", type=int, default=100, help="sessions of each policy run")
    p.add_argument(
        "--policy-think-s",
        type=float,
        default=2.0,
        help="pause between a policy run's calls (an agent's turn), so the run outlasts the "
        "checkpoint window and the loss shows the window, not the run's length",
    )
    p.add_argument(
        "--concurrency", default="100,300,1000", help="concurrent sessions per table row"
    )
    p.add_argument(
        "--conc-workers", type=int, default=2, help="prefork workers for the concurrency rows"
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="rounds of each concurrency level on every server; goals read the median ratio",
    )
    p.add_argument("--seq-calls", type=int, default=200, help="calls of the sequential phase")
    p.add_argument("--sessions", type=int, default=1000, help="App. D rollout: sessions at once")
    p.add_argument("--calls", type=int, default=10, help="planned calls per task")
    p.add_argument(
        "--cold-tasks", type=int, default=10, help="tasks for the cold first-call median"
    )
    p.add_argument("--seed-rows", type=int, default=2000, help="rows in the initialized DB")
    p.add_argument("--local-fleet", type=int, default=52, help="one-session local processes")
    p.add_argument("--workers", type=int, default=8, help="prefork workers for the 52-session run")
    p.add_argument("--quick", action="store_true", help="small smoke run")
    p.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = p.parse_args()
    if args.repeats < 1:
        p.error(f"--repeats must be at least 1, got {args.repeats}")
    if args.quick:
        args.sessions, args.cold_tasks, args.local_fleet, args.calls = 50, 3, 52, 4
        args.concurrency, args.seq_calls, args.repeats = "20,50", 50, 1
    r = asyncio.run(main(args))
    out = Console(width=150)
    if "concurrency" in r:
        out.print(render_concurrency(r["concurrency"]))
        t = Table(title="Goals (issue 17), from this run")
        for col in ("goal", "measured", "met"):
            t.add_column(col)
        for goal, value, met in r["targets"]:
            t.add_row(goal, value, "yes" if met else "NO")
        out.print(t)
    if r.get("policies"):
        out.print(render_policies(r["policies"]))
    if "mega_cold" in r:
        out.print(render(r))
    if args.json is not None:
        args.json.write_text(json.dumps(r, indent=2, default=str))
        console.log(f"figures written to {args.json}")


if __name__ == "__main__":
    cli()
