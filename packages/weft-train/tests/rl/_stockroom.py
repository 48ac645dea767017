"""The benchmark's stockroom MCP module on a real MegaMCP host, for integration tests."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType

from weft_core.models import TaskGraph
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.settings import MegaMCPSettings

STOCKROOM = Path(__file__).resolve().parents[4] / "benchmarks" / "train" / "stockroom"


def stockroom_tasks() -> ModuleType:
    name = "weft_bench_stockroom_tasks"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, STOCKROOM / "tasks.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@asynccontextmanager
async def stockroom(
    tmp: Path, n: int = 2, turns: int = 2
) -> AsyncIterator[tuple[MegaMCPClient, list[TaskGraph]]]:
    async with stockroom_host(tmp, n, turns) as (_, client, graphs):
        yield client, graphs


@asynccontextmanager
async def stockroom_host(
    tmp: Path, n: int = 2, turns: int = 2
) -> AsyncIterator[tuple[MegaMCPHost, MegaMCPClient, list[TaskGraph]]]:
    tasks = stockroom_tasks()
    async with (
        MegaMCPHost.running(
            MegaMCPSettings(data_dir=tmp / "megamcp", offload_after_s=3600)
        ) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        rec = await client.register(STOCKROOM, name="st")
        seed = tasks.write_seed(tmp / "seed.sqlite")
        uri = await client.put_snapshot(rec.mcp_id, seed)
        yield host, client, tasks.make_tasks(n, turns, 0, tasks.snapshot_ref(seed, uri))
