"""MegaMCP fault and hostile-input suite: each row attacks a real host and counts what got through.

usage: uv run python benchmarks/megamcp/faults.py [--sessions 10] [--writes 25] [--rows ...]
       [--register-timeout 30] [--json FILE]

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
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import CallResult
from weft_megamcp.settings import MegaMCPSettings

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "packages" / "weft-megamcp" / "tests" / "data" / "notes_bundle"

FILE_SERVER = """\
import base64, os
from pathlib import Path
from fastmcp import FastMCP

mcp = FastMCP("file_server")


@mcp.tool
def ls(path: str) -> list[str]:
    return sorted(os.listdir(path))


@mcp.tool
def read(path: str) -> str:
    return base64.b64encode(Path(path).read_bytes()).decode()


@mcp.tool
def env() -> dict[str, str]:
    return dict(os.environ)


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
"""


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
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--fuzz-calls", type=int, default=1000, help="fuzz row: hostile tool calls")
    p.add_argument("--fuzz-sessions", type=int, default=30, help="fuzz row: sessions (3 per group)")
    p.add_argument("--workers", type=int, default=2, help="fuzz row: prefork workers")
    p.add_argument(
        "--rows",
        type=lambda v: v.split(","),
        default=["sandbox", "fencing", "registration", "seed"],
        help="comma-separated subset of sandbox,fencing,registration,seed,fuzz (fuzz_row.py)",
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
