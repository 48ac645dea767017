"""MegaMCP fault and hostile-input suite: each row attacks a real host and counts what got through.

usage: uv run python benchmarks/megamcp/faults.py [--sessions 10] [--writes 25] [--rows ...]
       [--register-timeout 30] [--kills 8] [--json FILE]

Rows (issue 18; every figure comes from real `weft-megamcp` hosts on 127.0.0.1):

- sandbox: a hostile stdio MCP (`ls`/`read`/`env`, results base64 past any scrubber) hosted by
  a `weft-megamcp serve` subprocess, one session per group, tries to read other sessions' DBs
  and workspaces, the registry DB, stored objects (verifier code, snapshots), the host's
  /proc/<pid>/environ and cmdline, and to list the data dir; a leak is a successful read/list
  or any secret (admin token, other sessions' data, the data dir path) in what it saw.
- fencing: a second real host on the same data dir takes the sessions over; the old host gets
  `--writes` writes per session afterwards; acknowledged ones are counted (goal 0).
- registration: modules that exit, raise or hang at import and a command that never answers
  tools/list; each must give a one-line error within register_timeout_s and leave the host up.
- seed workspace: sessions of a bundle with seed_workspace/ that start with its files.
- kill -9: `--kills` kill -9s, spread over a prefork host's workers, its master and a whole
  single-process `weft-megamcp serve` host, while one writer per session keeps writing. A write
  is acknowledged when its caller got a successful result. A killed worker is replaced by the
  master; a killed master or host is restarted on the same data dir (what a supervisor does).
  Leaks: acknowledged writes missing from the state afterwards (goal 0); the note also counts
  acknowledged writes missing from the ledger and session DBs failing PRAGMA integrity_check.
- fuzz (only when named in --rows): `--fuzz-calls` hostile tool calls over `--fuzz-sessions`
  sessions through `weft-megamcp serve --workers N`; see fuzz_row.py.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import random
import secrets
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

import weft_megamcp.host
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.host import MegaMCPHost, bind_socket
from weft_megamcp.models import CallResult, GroupHandle
from weft_megamcp.settings import MegaMCPSettings

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "packages" / "weft-megamcp" / "tests" / "data" / "notes_bundle"

# The hostile stdio MCP (`ls` / `read` / `env` / `write` of anything), shared with the tests.
FILE_SERVER = (BUNDLE.parent / "file_server.py").read_text(encoding="utf-8")


def _seen(res: CallResult) -> bytes:
    out = res.text.encode()
    value = res.structured.get("result") if isinstance(res.structured, dict) else None
    if not res.is_error and isinstance(value, str):
        with contextlib.suppress(ValueError):
            out += base64.b64decode(value, validate=True)
    return out


async def sandbox_row(tmp: Path, sessions: int) -> dict[str, Any]:
    tmp.mkdir(parents=True, exist_ok=True)
    admin = "adm-" + secrets.token_urlsafe(24)
    server = tmp / "srv" / "file_server.py"
    server.parent.mkdir(parents=True)
    server.write_text(FILE_SERVER)
    bundle = tmp / "bundle"
    shutil.copytree(BUNDLE, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    settings = MegaMCPSettings(data_dir=tmp / "sandbox-data", admin_token=admin)
    data = settings.data_dir.resolve()
    attempts = leaks = 0
    secrets_: list[str] = [admin, str(data)]
    async with (
        MegaMCPHost.running(settings, subprocess=True) as host,
        MegaMCPClient(host.url, admin) as client,
    ):
        notes = await client.register(bundle)
        files = await client.register_command([sys.executable, str(server)], name="files")
        groups = []
        for i in range(sessions):
            email = f"secret-{i}-{secrets.token_hex(4)}@x.y"
            secrets_.append(email)
            g = await client.create_group([notes.mcp_id, files.mcp_id])
            await client.call_tool(g, notes.mcp_id, "add_contact", {"name": "S", "email": email})
            groups.append(g)
        for i, g in enumerate(groups):
            neighbour = groups[(i + 1) % len(groups)]
            root = data / "groups" / neighbour.group_id
            reads = [
                root / notes.mcp_id / "state.sqlite",
                data / "registry.sqlite",
                data / "host.log",
                Path(f"/proc/{host.pid}/environ"),
                Path(f"/proc/{host.pid}/cmdline"),
                *[p for p in sorted((data / "objects").rglob("*"))[:4] if p.is_file()],
            ]
            lists = [data, data / "groups", root]
            seen = b""
            for path in reads:
                res = await client.call_tool(g, files.mcp_id, "read", {"path": str(path)})
                attempts += 1
                leaks += not res.is_error
                seen += _seen(res)
            for path in lists:
                res = await client.call_tool(g, files.mcp_id, "ls", {"path": str(path)})
                attempts += 1
                leaks += not res.is_error
                seen += _seen(res)
            env = await client.call_tool(g, files.mcp_id, "env", {})
            attempts += 1
            seen += env.text.encode()
            # Not even its own group's other session (the notes DB) is visible to it.
            leaks += sum(
                1 for s in secrets_ if s.encode() in seen or base64.b64encode(s.encode()) in seen
            )
    return {
        "row": "sandbox",
        "sessions": sessions,
        "attempts": attempts,
        "leaks": leaks,
        "refused_pct": round(100.0 * (attempts - leaks) / max(attempts, 1), 2),
    }


async def _writes(client: MegaMCPClient, group: Any, mcp: str, n: int, tag: str) -> int:
    acked = 0
    for i in range(n):
        res = await client.call_tool(
            group, mcp, "add_contact", {"name": f"{tag}{i}", "email": f"{tag}{i}@x.y"}
        )
        acked += not res.is_error
    return acked


async def fencing_row(tmp: Path, sessions: int, writes: int) -> dict[str, Any]:
    tmp.mkdir(parents=True, exist_ok=True)
    data = tmp / "fence-data"
    bundle = tmp / "fence-bundle"
    shutil.copytree(BUNDLE, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    a_set = MegaMCPSettings(data_dir=data, admin_token="adm-a", offload_after_s=3600)
    b_set = MegaMCPSettings(data_dir=data, admin_token="adm-b", offload_after_s=3600)
    async with MegaMCPHost.running(a_set) as a, MegaMCPClient(a.url, a.admin_token) as ca:
        rec = await ca.register(bundle)
        groups = [await ca.create_group([rec.mcp_id]) for _ in range(sessions)]
        for g in groups:
            await _writes(ca, g, rec.mcp_id, 2, "pre")
            await ca.checkpoint(g)
        async with MegaMCPHost.running(b_set, subprocess=True):
            t0 = time.perf_counter()
            acked = 0
            for g in groups:
                acked += await _writes(ca, g, rec.mcp_id, writes, "late")
            took = time.perf_counter() - t0
    total = sessions * writes
    return {
        "row": "fencing",
        "sessions": sessions,
        "attempts": total,
        "leaks": acked,
        "refused_pct": round(100.0 * (total - acked) / max(total, 1), 2),
        "note": f"writes to the fenced host after takeover, {took:.1f} s",
    }


HOSTILE_MODULES = {
    "os._exit(0) at import": "import os\nos._exit(0)\n",
    "sys.exit(3) at import": "import sys\nsys.exit(3)\n",
    "raises at import": "raise RuntimeError('boom')\n",
    "hangs at import": "import time\ntime.sleep(3600)\n",
}
SILENT_COMMAND = "import sys, time\nsys.stdin.readline()\ntime.sleep(3600)\n"


async def registration_row(tmp: Path, limit_s: float) -> dict[str, Any]:
    tmp.mkdir(parents=True, exist_ok=True)
    settings = MegaMCPSettings(
        data_dir=tmp / "reg-data", admin_token="adm-reg", register_timeout_s=limit_s
    )
    attempts = leaks = 0
    worst = 0.0
    # A subprocess host takes settings beyond host/port/data dir from its environment.
    os.environ["WEFT_MEGAMCP_REGISTER_TIMEOUT_S"] = f"{limit_s:g}"
    async with (
        MegaMCPHost.running(settings, subprocess=True) as host,
        MegaMCPClient(host.url, host.admin_token, timeout_s=limit_s * 4) as client,
    ):
        cases: list[tuple[str, Any]] = []
        for name, code in HOSTILE_MODULES.items():
            p = tmp / f"hostile_{len(cases)}.py"
            p.write_text(code)
            cases.append((name, client.register(p)))
        silent = tmp / "silent.py"
        silent.write_text(SILENT_COMMAND)
        cases.append(
            (
                "silent command",
                client.register_command([sys.executable, str(silent)], name="silent"),
            )
        )
        times = {}
        for name, coro in cases:
            attempts += 1
            t0 = time.perf_counter()
            try:
                await coro
                leaks += 1  # registered: it should have been refused
            except MegaMCPUserError as exc:
                leaks += "\n" in str(exc)
            times[name] = time.perf_counter() - t0
            worst = max(worst, times[name])
        alive = host._proc is not None and host._proc.poll() is None
        leaks += not alive
    return {
        "row": "registration",
        "sessions": 0,
        "attempts": attempts,
        "leaks": leaks,
        "refused_pct": round(100.0 * (attempts - leaks) / max(attempts, 1), 2),
        "note": f"slowest answer {worst:.1f} s (limit {limit_s:g} s); host alive: {alive}",
        "seconds": {k: round(v, 1) for k, v in times.items()},
    }


async def seed_row(tmp: Path, sessions: int) -> dict[str, Any]:
    tmp.mkdir(parents=True, exist_ok=True)
    bundle = tmp / "seed-bundle"
    shutil.copytree(BUNDLE, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    (bundle / "seed_workspace").mkdir()
    (bundle / "seed_workspace" / "brief.txt").write_text("seeded")
    settings = MegaMCPSettings(data_dir=tmp / "seed-data", admin_token="adm-seed")
    missing = 0
    async with MegaMCPHost.running(settings) as host, MegaMCPClient(host.url, "adm-seed") as c:
        rec = await c.register(bundle)
        for _ in range(sessions):
            g = await c.create_group([rec.mcp_id])
            res = await c.call_tool(g, rec.mcp_id, "read_note", {"path": "brief.txt"})
            missing += res.is_error or res.text != "seeded"
            await c.close(g)
    return {
        "row": "seed workspace",
        "sessions": sessions,
        "attempts": sessions,
        "leaks": missing,
        "refused_pct": round(100.0 * (sessions - missing) / max(sessions, 1), 2),
        "note": "leaks = sessions that started without the seed files",
    }


class _Writer:
    """One session's writer: add_contact in a loop through the host's URL (the master routes by
    token, so the session survives a worker moving or a restart on a new worker port)."""

    def __init__(self, url: str, admin: str, group: GroupHandle, mcp: str, tag: str) -> None:
        self.url, self.admin, self.mcp, self.tag = url, admin, mcp, tag
        self.group = group.model_copy(
            update={
                "sessions": {
                    m: s.model_copy(update={"url": f"{url}/mcp"}) for m, s in group.sessions.items()
                }
            }
        )
        self.acked: list[str] = []
        self.failed = 0
        self.stop = False

    async def run(self) -> None:
        client = MegaMCPClient(self.url, self.admin, timeout_s=60)
        n = 0
        try:
            while not self.stop:
                name = f"{self.tag}-{n}"
                n += 1
                try:
                    res = await client.call_tool(
                        self.group, self.mcp, "add_contact", {"name": name, "email": f"{name}@x.y"}
                    )
                except Exception:  # the host is down or the worker died mid-call
                    res = None
                if res is not None and not res.is_error:
                    self.acked.append(name)
                    continue
                self.failed += 1
                with contextlib.suppress(Exception):
                    await client.aclose()
                client = MegaMCPClient(self.url, self.admin, timeout_s=60)
                await asyncio.sleep(0.2)
        finally:
            with contextlib.suppress(Exception):
                await client.aclose()


def _free_port() -> int:
    probe = bind_socket("127.0.0.1", 0)
    port = int(probe.getsockname()[1])
    probe.close()
    return port


async def _worker_pids(host: MegaMCPHost) -> list[int]:
    async with httpx.AsyncClient() as http:
        resp = await http.get(
            f"{host.url}/admin/workers",
            headers={"authorization": f"Bearer {host.admin_token}"},
            timeout=30,
        )
    return [int(w["pid"]) for w in resp.json() if w.get("alive") and w.get("groups", 0) > 0]


def _kill_tree_wait(pid: int, timeout_s: float = 30.0) -> None:
    """kill -9 `pid`, then wait until it and every process it had forked are gone (a killed
    master's workers leave by themselves within a second; a supervisor restarts after that)."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    os.kill(pid, signal.SIGKILL)
    _gone, alive = psutil.wait_procs([psutil.Process(pid), *children], timeout=timeout_s)
    for p in alive:  # not expected; never leave one behind
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()


def _corrupt_dbs(data_dir: Path) -> tuple[int, int]:
    dbs = sorted(data_dir.glob("groups/grp_*/*/state.sqlite"))
    bad = 0
    for db in dbs:
        try:
            con = sqlite3.connect(db)
            try:
                ok = con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            finally:
                con.close()
        except sqlite3.Error:
            ok = False
        bad += not ok
    return bad, len(dbs)


async def _kill_phase(
    tmp: Path, bundle: Path, sessions: int, plan: list[str], workers: int
) -> dict[str, Any]:
    """One host (prefork with `workers`, or single-process), `sessions` writers, and the kills of
    `plan` ("worker", "master" or "host") one after another while they write."""
    rng = random.Random(len(plan) * 7 + workers)
    # A restart resumes every group first; on a loaded 2-core machine that has taken > 3 min.
    weft_megamcp.host.STARTUP_TIMEOUT_S = max(weft_megamcp.host.STARTUP_TIMEOUT_S, 900.0)
    admin = "adm-kill-" + secrets.token_hex(4)
    settings = MegaMCPSettings(
        data_dir=tmp / f"kill-data-{workers}",
        admin_token=admin,
        port=_free_port(),
        workers=workers,
        offload_after_s=3600,
    )
    host = await MegaMCPHost.start(settings, subprocess=True)
    writers: list[_Writer] = []
    tasks: list[asyncio.Task[None]] = []
    restarts = 0
    try:
        async with MegaMCPClient(host.url, admin) as client:
            rec = await client.register(bundle)
            groups = [await client.create_group([rec.mcp_id]) for _ in range(sessions)]
        writers = [
            _Writer(host.url, admin, g, rec.mcp_id, f"w{workers}s{i}") for i, g in enumerate(groups)
        ]
        tasks = [asyncio.create_task(w.run()) for w in writers]
        for kind in plan:
            before = sum(len(w.acked) for w in writers)
            deadline = time.monotonic() + 120
            while sum(len(w.acked) for w in writers) < before + sessions:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no writes acknowledged for 120 s before a {kind} kill")
                await asyncio.sleep(0.05)
            await asyncio.sleep(rng.uniform(0.0, 0.5))  # mid-stream, at no chosen instant
            t_kill = time.perf_counter()
            if kind == "worker":
                pids = await _worker_pids(host)
                await asyncio.to_thread(_kill_tree_wait, rng.choice(pids))
                # the master replaces it and the replacement adopts its groups
            else:
                assert host._proc is not None
                await asyncio.to_thread(_kill_tree_wait, host._proc.pid)
                host = await MegaMCPHost.start(settings, subprocess=True)
                restarts += 1
            print(f"  kill -9 {kind}: {time.perf_counter() - t_kill:.1f} s", file=sys.stderr)
        for w in writers:
            w.stop = True
        await asyncio.gather(*tasks)
        missing = ledger_missing = 0
        async with MegaMCPClient(host.url, admin, timeout_s=120) as client:
            for w, g in zip(writers, groups, strict=True):
                res = await client.call_tool(w.group, rec.mcp_id, "list_contacts")
                names = {c["name"] for c in res.structured["result"]} if not res.is_error else set()
                missing += len(set(w.acked) - names)
                ledgered = {
                    e.arguments.get("name")
                    for e in (await client.ledger(g))[rec.mcp_id]
                    if e.tool == "add_contact" and not e.is_error
                }
                ledger_missing += len(set(w.acked) - ledgered)
    finally:
        for w in writers:
            w.stop = True
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await host.stop()
    corrupt, dbs = _corrupt_dbs(settings.data_dir)
    return {
        "acked": sum(len(w.acked) for w in writers),
        "failed": sum(w.failed for w in writers),
        "missing": missing,
        "ledger_missing": ledger_missing,
        "corrupt": corrupt,
        "dbs": dbs,
        "restarts": restarts,
    }


async def kill_row(tmp: Path, sessions: int, kills: int) -> dict[str, Any]:
    """`kills` kill -9s: one in 50 (at least one) of a master, as many of whole hosts, the rest
    of workers (a master or host restart costs a full start, minutes on a loaded 2-core box)."""
    tmp.mkdir(parents=True, exist_ok=True)
    bundle = tmp / "kill-bundle"
    shutil.copytree(BUNDLE, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    n_host = n_master = max(1, kills // 50) if kills >= 3 else 0
    n_worker = kills - n_host - n_master
    prefork_plan = ["worker"] * n_worker + ["master"] * n_master
    random.Random(kills).shuffle(prefork_plan)
    t0 = time.perf_counter()
    prefork = await _kill_phase(tmp, bundle, sessions, prefork_plan, workers=2)
    single = await _kill_phase(tmp, bundle, sessions, ["host"] * n_host, workers=0)
    took = time.perf_counter() - t0
    phases = (prefork, single)
    acked = sum(p["acked"] for p in phases)
    missing = sum(p["missing"] for p in phases)
    corrupt = sum(p["corrupt"] for p in phases)
    return {
        "row": "kill -9",
        "sessions": 2 * sessions,
        "attempts": acked,
        "leaks": missing + corrupt,
        "refused_pct": round(100.0 * (acked - missing) / max(acked, 1), 2),
        "note": (
            f"{kills} kills ({n_worker} workers, {n_master} masters, {n_host} hosts); "
            f"attempts = acknowledged writes; lost {missing}, missing from ledger "
            f"{sum(p['ledger_missing'] for p in phases)}, corrupt DBs {corrupt}/"
            f"{sum(p['dbs'] for p in phases)}; {sum(p['failed'] for p in phases)} "
            f"writes failed during outages; {took:.0f} s"
        ),
        "kills": {"worker": n_worker, "master": n_master, "host": n_host},
        "lost_acknowledged": missing,
        "ledger_missing": sum(p["ledger_missing"] for p in phases),
        "corrupt_dbs": corrupt,
    }


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="megamcp-faults-") as tmp:
        base = Path(tmp)
        if "sandbox" in args.rows:
            rows.append(await sandbox_row(base / "s", args.sessions))
        if "fencing" in args.rows:
            rows.append(await fencing_row(base / "f", args.sessions, args.writes))
        if "registration" in args.rows:
            rows.append(await registration_row(base / "r", args.register_timeout))
        if "seed" in args.rows:
            rows.append(await seed_row(base / "w", args.sessions))
        if "kill" in args.rows:
            rows.append(await kill_row(base / "k", args.sessions, args.kills))
        if "fuzz" in args.rows:
            from fuzz_row import fuzz_row

            rows.append(
                await fuzz_row(base / "z", args.fuzz_calls, args.fuzz_sessions, args.workers)
            )
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--writes", type=int, default=25)
    p.add_argument("--register-timeout", type=float, default=30.0)
    p.add_argument("--kills", type=int, default=8, help="kill -9s of the kill row")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--fuzz-calls", type=int, default=1000, help="fuzz row: hostile tool calls")
    p.add_argument("--fuzz-sessions", type=int, default=30, help="fuzz row: sessions (3 per group)")
    p.add_argument("--workers", type=int, default=2, help="fuzz row: prefork workers")
    p.add_argument(
        "--rows",
        type=lambda v: v.split(","),
        default=["sandbox", "fencing", "registration", "seed", "kill"],
        help="comma-separated subset of sandbox,fencing,registration,seed,kill,fuzz (fuzz_row.py)",
    )
    args = p.parse_args()
    rows = asyncio.run(main_async(args))
    print(f"{'row':<16} {'sessions':>8} {'attempts':>8} {'leaks':>6} {'refused %':>9}  note")
    for r in rows:
        print(
            f"{r['row']:<16} {r['sessions']:>8} {r['attempts']:>8} {r['leaks']:>6} "
            f"{r['refused_pct']:>9}  {r.get('note', '')}"
        )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=2))
    return 0 if all(r["leaks"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
