"""The fuzz row of faults.py: hostile tool arguments through a real `weft-megamcp serve --workers N`.

Each group holds a session of a bundle synthesized by weft-envsynth from a real spec, of the
notes bundle (DB and workspace files) and of a hosted stdio file MCP (`ls`/`read`/`env`, run
under MegaMCP's sandbox). Every group first plants a secret of its own (a contact email and a
workspace note). Then `calls` tool calls go out, each with hostile arguments drawn from: path
escapes (`..`, absolute paths to other sessions' DBs, the registry, /proc/<host>/environ),
other sessions' tokens and ids, the admin token, huge strings, odd types (lists, objects,
numbers where strings go), control chars, and (posted raw, as no MCP client sends them)
request bodies with bytes that are not UTF-8 or an escaped lone surrogate.

- leak: a result that holds another group's secret, another session's token, the admin token
  or the data dir path (raw or base64) that the call did not itself send;
- escape attempt: a file MCP `read`/`ls` of a path outside the session's workspace that exists
  on the host, or a notes `read_note` with an escape; refused = an error result;
- token attempt: a session opened with a forged token, the admin token, or a closed group's
  token; refused = the session could not open or call;
- broken answer: anything but a clean MCP result (an HTTP 500, a dropped connection) or an
  error text with a traceback.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import random
import secrets
import sys
from pathlib import Path
from typing import Any

import httpx

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import CallResult, GroupHandle
from weft_megamcp.settings import MegaMCPSettings

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "packages" / "weft-megamcp" / "tests" / "data" / "notes_bundle"
SPEC = ROOT / "packages" / "weft-core" / "tests" / "data" / "specs" / "mcp_tools_list.json"


def synthesize_bundle(out: Path) -> Path:
    """A bundle weft-envsynth generates from a real tools/list spec (programmatic strategy)."""
    from weft_envsynth.pipeline import synthesize_file

    result = synthesize_file(SPEC, out, rounds=1)
    if result.bundle is None:
        raise RuntimeError(f"synthesis of {SPEC.name} gave no bundle: {result.reason}")
    return Path(result.bundle)


def _b64(s: str) -> bytes:
    return base64.b64encode(s.encode())


def _seen(res: CallResult) -> bytes:
    out = res.text.encode("utf-8", "surrogatepass")
    value = res.structured.get("result") if isinstance(res.structured, dict) else None
    if not res.is_error and isinstance(value, str):
        with contextlib.suppress(ValueError):
            out += base64.b64decode(value, validate=True)
    return out


class Fuzzer:
    def __init__(self, rng: random.Random, data: Path, admin: str, host_pid: int | None) -> None:
        self.rng = rng
        self.data = data
        self.admin = admin
        self.host_pid = host_pid
        self.groups: list[GroupHandle] = []
        self.planted: dict[str, str] = {}  # group id -> its secret

    def hostile_value(self, me: GroupHandle) -> Any:
        other = self.rng.choice(self.groups)
        sess = self.rng.choice(list(other.sessions.values()))
        pool: list[Any] = [
            "../" * self.rng.randint(1, 8) + "state.sqlite",
            "../../../registry.sqlite",
            str(self.data / "groups" / other.group_id),
            f"/proc/{self.host_pid}/environ",
            "/etc/passwd",
            sess.token,
            sess.session_id,
            other.group_id,
            self.admin,
            "x" * self.rng.choice([10_000, 200_000]),
            b"\xff\xfe not utf-8".decode("latin-1"),
            "ctl\x00\x01\x1b[31m\r\n",
            ["list", 1],
            {"obj": {"nested": [1, 2]}},
            -(2**63),
            1e308,
            None,
            True,
        ]
        return self.rng.choice(pool)

    def escape_target(self, me: GroupHandle) -> Path:
        other = self.rng.choice([g for g in self.groups if g is not me] or self.groups)
        return self.rng.choice(
            [
                self.data / "groups" / other.group_id / "notes" / "state.sqlite",
                self.data / "registry.sqlite",
                self.data / "groups",
                self.data,
                Path(f"/proc/{self.host_pid}/environ"),
            ]
        )

    def secrets_for(self, me: GroupHandle) -> list[str]:
        out = [self.admin, str(self.data)]
        for g in self.groups:
            if g.group_id == me.group_id:
                continue
            out.append(self.planted[g.group_id])
            out.extend(s.token for s in g.sessions.values())
        return out


async def fuzz_row(tmp: Path, calls: int, sessions: int, workers: int) -> dict[str, Any]:
    from faults import FILE_SERVER  # the sandbox row's hostile file MCP

    tmp.mkdir(parents=True, exist_ok=True)
    rng = random.Random(18)
    admin = "adm-" + secrets.token_urlsafe(24)
    server = tmp / "srv" / "file_server.py"
    server.parent.mkdir(parents=True)
    server.write_text(FILE_SERVER)
    generated = synthesize_bundle(tmp / "gen")
    settings = MegaMCPSettings(data_dir=tmp / "fuzz-data", admin_token=admin, workers=workers)
    data = settings.data_dir.resolve()
    n_groups = max(2, -(-sessions // 3))
    counts: dict[str, Any] = {"calls": 0, "leaks": 0, "escapes": 0, "escapes_refused": 0}
    counts |= {"tokens": 0, "tokens_refused": 0, "broken": 0, "errors": 0}
    counts |= {"raw": 0, "raw_refused": 0}
    async with (
        MegaMCPHost.running(settings, subprocess=True) as host,
        MegaMCPClient(host.url, admin) as client,
    ):
        gen = await client.register(generated)
        notes = await client.register(NOTES, name="notes")
        files = await client.register_command([sys.executable, str(server)], name="files")
        fz = Fuzzer(rng, data, admin, host.pid)
        for _ in range(n_groups):
            g = await client.create_group([gen.mcp_id, notes.mcp_id, files.mcp_id])
            secret = f"secret-{secrets.token_hex(8)}"
            await client.call_tool(g, notes.mcp_id, "add_contact", {"name": "S", "email": secret})
            await client.call_tool(g, notes.mcp_id, "write_note", {"path": "s.txt", "text": secret})
            fz.groups.append(g)
            fz.planted[g.group_id] = secret
        gen_tools = [
            (t.name, list((t.input_schema or {}).get("properties", {})))
            for t in await client.list_tools(fz.groups[0], gen.mcp_id)
        ]
        notes_tools = [
            (t.name, list((t.input_schema or {}).get("properties", {})))
            for t in await client.list_tools(fz.groups[0], notes.mcp_id)
            if t.name != "slow_add"
        ]

        async def one(g: GroupHandle, k: int) -> None:
            kind = k % 10
            escape = False
            if kind in (0, 1):  # the file MCP: reads and lists outside its workspace
                tool = "read" if kind == 0 else "ls"
                args: dict[str, Any] = {"path": str(fz.escape_target(g))}
                mcp, escape = files.mcp_id, True
            elif kind == 2:  # notes: a path escape through a DB-backed bundle
                mcp, tool = notes.mcp_id, "read_note"
                args, escape = {"path": "../" * rng.randint(1, 6) + "state.sqlite"}, True
            else:
                mcp = gen.mcp_id if kind < 7 else notes.mcp_id
                tool, props = rng.choice(gen_tools if kind < 7 else notes_tools)
                args = {p: fz.hostile_value(g) for p in props}
                if rng.random() < 0.2:
                    args[f"extra_{k}"] = fz.hostile_value(g)
            try:
                res = await client.call_tool(g, mcp, tool, args)
            except Exception as exc:
                counts["broken"] += 1
                kinds = counts.setdefault("broken_kinds", {})
                key = f"{type(exc).__name__}: {str(exc)[:80]}"
                kinds[key] = kinds.get(key, 0) + 1
                return
            finally:
                counts["calls"] += 1
            counts["errors"] += res.is_error
            if res.is_error and "Traceback" in res.text:
                counts["broken"] += 1
            if escape:
                counts["escapes"] += 1
                counts["escapes_refused"] += res.is_error
            sent = repr(args).encode("utf-8", "surrogatepass")
            seen = _seen(res)
            for s in fz.secrets_for(g):
                if s.encode() in sent:
                    continue  # an echo of the caller's own argument is not a leak
                if s.encode() in seen or _b64(s) in seen:
                    counts["leaks"] += 1

        sem = asyncio.Semaphore(24)

        async def bounded(g: GroupHandle, k: int) -> None:
            async with sem:
                await one(g, k)

        await asyncio.gather(
            *(bounded(fz.groups[k % n_groups], k) for k in range(calls)), return_exceptions=False
        )
        # Bytes no MCP client sends (invalid UTF-8, an escaped lone surrogate), posted raw.
        async with httpx.AsyncClient(timeout=60) as http:
            for k in range(20):
                info = fz.groups[k % n_groups].sessions[notes.mcp_id]
                arg = b'"\xff\xfe\xc0"' if k % 2 else b'"\\ud800"'
                body = (
                    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":'
                    b'"read_note","arguments":{"path":' + arg + b"}}}"
                )
                headers = {
                    "authorization": f"Bearer {info.token}",
                    "content-type": "application/json",
                    "accept": "application/json, text/event-stream",
                }
                resp = await http.post(info.url, content=body, headers=headers)
                counts["raw"] += 1
                counts["raw_refused"] += 400 <= resp.status_code < 500 or (
                    resp.status_code == 200 and b'"error"' in resp.content
                )
                counts["broken"] += resp.status_code >= 500 or b"Traceback" in resp.content
        # Tokens: forged, the admin token, a closed group's token, each as a session bearer.
        closed = fz.groups[-1]
        await client.close(closed)
        for k in range(30):
            g = fz.groups[k % (n_groups - 1)]
            info = g.sessions[notes.mcp_id]
            token = [f"ses-forged-{secrets.token_hex(16)}", admin][k % 2] if k < 20 else None
            if token is None:
                info = closed.sessions[notes.mcp_id]
                token = info.token
            forged = info.model_copy(
                update={"token": token, "session_id": f"{info.session_id}-{k}"}
            )
            handle = g.model_copy(update={"sessions": {notes.mcp_id: forged}})
            counts["tokens"] += 1
            try:
                res = await client.call_tool(handle, notes.mcp_id, "list_contacts", {})
                refused = res.is_error
            except Exception:
                refused = True
            counts["tokens_refused"] += refused
    attempts = counts["escapes"] + counts["tokens"] + counts["raw"]
    refused = counts["escapes_refused"] + counts["tokens_refused"] + counts["raw_refused"]
    return {
        "row": "fuzz",
        "sessions": n_groups * 3,
        "workers": workers,
        "attempts": counts["calls"] + counts["tokens"] + counts["raw"],
        "leaks": counts["leaks"] + counts["broken"],
        "refused_pct": round(100.0 * refused / max(attempts, 1), 2),
        "note": (
            f"{counts['calls']} fuzzed calls ({counts['errors']} errors), "
            f"{counts['escapes_refused']}/{counts['escapes']} escapes and "
            f"{counts['tokens_refused']}/{counts['tokens']} token attempts and "
            f"{counts['raw_refused']}/{counts['raw']} non-UTF-8 bodies refused, "
            f"{counts['broken']} broken answers"
        ),
        **counts,
    }
