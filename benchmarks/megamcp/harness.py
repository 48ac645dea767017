"""The two serving modes of the App. D comparison, driven over the same MCP client code.

(a) LocalServing: per task, a sandbox folder receives the MCP source, an initialized DB and the
    server runner; one server process per session is started from it and stopped at task end.
(b) MegaServing: one MegaMCP host (a `weft-megamcp serve` subprocess, optionally prefork) holds
    the registered bundle; per task, a session group is created, the sandbox receives only the
    session URL and token, and the group is closed at task end.
Both sides talk to their server with a fastmcp Client over streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
from fastmcp import Client
from traces import SHIPPED_SOURCE, Call, trace_bytes

from weft_megamcp import MegaMCPClient, MegaMCPHost, MegaMCPSettings

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "sandbox_server.py"


@dataclass
class TaskResult:
    ok: bool
    first_call_s: float | None = None  # from task start to the first tool result
    latencies_ms: list[float] = field(default_factory=list)
    calls: int = 0
    errors: int = 0
    failure: str | None = None


async def run_calls(client: Client, trace: list[Call], res: TaskResult, t0: float) -> None:
    for tool, args in trace:
        start = time.perf_counter()
        out = await client.call_tool(tool, args, raise_on_error=False)
        end = time.perf_counter()
        if res.first_call_s is None:
            res.first_call_s = end - t0
        res.latencies_ms.append((end - start) * 1000)
        res.calls += 1
        res.errors += int(out.is_error)


def _write(path: Path, data: bytes) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return len(data)


def tree_memory(pids: list[int]) -> tuple[int, int]:
    """(sum RSS, sum PSS) over the processes and all their descendants."""
    seen: set[int] = set()
    rss = pss = 0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for p in procs:
            if p.pid in seen:
                continue
            seen.add(p.pid)
            try:
                info = p.memory_full_info()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            rss += info.rss
            pss += getattr(info, "pss", info.rss)
    return rss, pss


class LocalServing:
    name = "sandbox-local"

    def __init__(self, bundle: Path, root: Path) -> None:
        self.bundle = bundle
        self.root = root

    def ship(self, task: int, trace: list[Call]) -> tuple[Path, int]:
        """Upload everything the sandbox needs to serve its own MCP: source, initialized DB,
        server runner, and the task trace."""
        box = self.root / f"task-{task:05d}"
        if box.exists():
            shutil.rmtree(box)
        n = 0
        for name in SHIPPED_SOURCE:
            n += _write(box / "server_pkg" / name, (self.bundle / name).read_bytes())
        n += _write(box / "state.sqlite", (self.bundle / "seed.sqlite").read_bytes())
        n += _write(box / "sandbox_server.py", RUNNER.read_bytes())
        n += _write(box / "trace.json", trace_bytes(trace))
        (box / "workspace").mkdir()
        return box, n

    async def start(self, box: Path) -> tuple[asyncio.subprocess.Process, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(box / "sandbox_server.py"),
            str(box),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 300)).decode()
        if not line.startswith("PORT "):
            proc.kill()
            raise RuntimeError(f"sandbox server did not start: {line!r}")
        return proc, f"http://127.0.0.1:{int(line.split()[1])}/mcp"

    async def stop(self, proc: asyncio.subprocess.Process, box: Path | None) -> None:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if box is not None:
            shutil.rmtree(box, ignore_errors=True)

    async def lifecycle(self, task: int, trace: list[Call]) -> tuple[TaskResult, int]:
        """Cold: ship, start the server, run the trace, stop, clean up."""
        res = TaskResult(ok=False)
        t0 = time.perf_counter()
        box, shipped = self.ship(task, trace)
        proc = None
        try:
            proc, url = await self.start(box)
            async with Client(url) as client:
                await run_calls(client, trace, res, t0)
            res.ok = True
        except Exception as exc:
            res.failure = f"{type(exc).__name__}: {exc}"
        finally:
            if proc is not None:
                await self.stop(proc, box)
        return res, shipped


class MegaServing:
    name = "MegaMCP"

    def __init__(self, bundle: Path, root: Path, workers: int = 0, pack: int | None = None) -> None:
        self.bundle = bundle
        self.root = root
        self.workers = workers
        self.pack = pack  # worker_pack_sessions; None = the host's default
        self.host: MegaMCPHost | None = None
        self.client: MegaMCPClient | None = None
        self.mcp_id = ""

    async def start(self) -> float:
        t0 = time.perf_counter()
        settings = MegaMCPSettings(
            data_dir=self.root / f"host-w{self.workers}",
            admin_token=secrets.token_urlsafe(24),
            workers=self.workers,
            offload_after_s=3600,
            log_level="warning",
            **({} if self.pack is None else {"worker_pack_sessions": self.pack}),
        )
        self.host = await MegaMCPHost.start(settings, subprocess=True)
        self.client = MegaMCPClient(self.host.url, self.host.admin_token)
        await self.client.__aenter__()
        rec = await self.client.register(self.bundle, name="bench_crm")
        self.mcp_id = rec.mcp_id
        return time.perf_counter() - t0

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.__aexit__(None, None, None)
        if self.host is not None:
            await self.host.stop()

    async def worker_processes(self) -> int:
        """Worker processes the prefork master runs now (0 in one-process mode)."""
        if self.workers <= 1 or self.host is None:
            return 0
        async with httpx.AsyncClient() as http:
            resp = await http.get(
                f"{self.host.url}/admin/workers",
                headers={"authorization": f"Bearer {self.host.admin_token}"},
            )
            resp.raise_for_status()
            return len(resp.json())

    @property
    def pid(self) -> int:
        assert self.host is not None and self.host.pid is not None
        return self.host.pid

    def ship(self, task: int, trace: list[Call], url: str, token: str) -> int:
        """Upload what the sandbox needs: the task trace and its session's URL and token."""
        box = self.root / "sandboxes" / f"task-{task:05d}"
        n = _write(box / "trace.json", trace_bytes(trace))
        n += _write(box / "session.json", json.dumps({"url": url, "token": token}).encode())
        return n

    async def open_group(self) -> Any:
        assert self.client is not None
        return await self.client.create_group({self.mcp_id: None})

    async def lifecycle(self, task: int, trace: list[Call]) -> tuple[TaskResult, int]:
        assert self.client is not None
        res = TaskResult(ok=False)
        t0 = time.perf_counter()
        shipped = 0
        group = None
        phase = "create_group"
        try:
            group = await self.open_group()
            info = group.session(self.mcp_id)
            shipped = self.ship(task, trace, info.url, info.token)
            phase = "calls"
            async with self.client.session_client(info) as client:
                await run_calls(client, trace, res, t0)
            res.ok = True
        except Exception as exc:
            res.failure = f"{phase}: {type(exc).__name__}: {exc}"
        finally:
            if group is not None:
                try:
                    await self.client.close(group)
                except Exception as exc:
                    res.ok = False
                    res.failure = f"close: {type(exc).__name__}: {exc}"
            shutil.rmtree(self.root / "sandboxes" / f"task-{task:05d}", ignore_errors=True)
        return res, shipped


def env_for_children() -> dict[str, str]:
    return dict(os.environ)
