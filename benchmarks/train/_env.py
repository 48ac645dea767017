"""The benchmark environment of benchmarks/train: weft-tasks' sample CRM and helpdesk bundles served
by a real MegaMCP host, their seed grown to many customers, and one composed three-node task per
customer (look the customer up by email -> upgrade them to gold with the id the lookup returned ->
open a high-priority helpdesk ticket about it; two MCPs, an information and a state edge)."""

from __future__ import annotations

import importlib.util
import json
import random
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from weft_core.models import SnapshotRef, TaskGraph

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "packages" / "weft-tasks" / "tests" / "rollout" / "data" / "sample_task.py"
FIRST = [
    "ada",
    "alan",
    "grace",
    "edsger",
    "barbara",
    "donald",
    "frances",
    "john",
    "karen",
    "leslie",
    "margaret",
    "niklaus",
]
LAST = [
    "lovelace",
    "turing",
    "hopper",
    "dijkstra",
    "liskov",
    "knuth",
    "allen",
    "backus",
    "jones",
    "lamport",
    "hamilton",
    "wirth",
]
SHORT_PROMPT = (
    "Use the tools to do what the user asks. When done, reply briefly without a tool call."
)


def _sample() -> Any:
    name = "weft_bench_sample_task"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SAMPLE)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


@dataclass
class Customer:
    id: int
    name: str
    email: str


def customers(n: int, seed: int = 0) -> list[Customer]:
    """n customers with ids 3.. (1 and 2 are the sample seed's)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        cid = 3 + i
        out.append(Customer(cid, f"{first.title()} {last.title()}", f"{first}{cid}@example.com"))
    return out


def graph_for(base: TaskGraph, c: Customer) -> TaskGraph:
    """The sample task, re-targeted from Ada (customer 1) to customer `c`."""
    text = base.model_dump_json(exclude={"content_hash"})
    text = text.replace("ada@example.com", c.email).replace("Ada Lovelace", c.name)
    data = json.loads(text)
    data["id"] = f"upgrade-and-ticket-{c.id}"
    for node in data["nodes"]:
        for check in node["checks"]:
            for key in ("value", "where"):
                if check.get(key) == {"id": 1}:
                    check[key] = {"id": c.id}
    data["bindings"][0]["value"]["id"] = c.id
    return TaskGraph.model_validate(data).sealed()


@asynccontextmanager
async def environment(
    n_customers: int, tmp: Path, seed: int = 0
) -> AsyncIterator[tuple[Any, list[TaskGraph]]]:
    """(MegaMCP client, one task graph per generated customer)."""
    from weft_megamcp.client import MegaMCPClient
    from weft_megamcp.host import MegaMCPHost
    from weft_megamcp.settings import MegaMCPSettings

    sample = _sample()
    people = customers(n_customers, seed)
    async with MegaMCPHost.running(MegaMCPSettings(data_dir=tmp / "megamcp")) as host:
        client = MegaMCPClient(host.url, host.admin_token)
        snapshots = {}
        for mcp in ("crm", "helpdesk"):
            bundle = sample.build_bundle(mcp, tmp / "bundles")
            if mcp == "crm":
                db = sqlite3.connect(bundle / "seed.sqlite")
                db.executemany(
                    "INSERT INTO customer VALUES (?, ?, ?, ?)",
                    [(c.id, c.name, c.email, "silver") for c in people],
                )
                db.commit()
                db.close()
            await client.register(bundle)
            uri = await client.put_snapshot(mcp, bundle / "seed.sqlite")
            snapshots[mcp] = SnapshotRef(mcp=mcp, uri=uri, sha256="")
        base = sample.sample_graph(snapshots)
        try:
            yield client, [graph_for(base, c) for c in people]
        finally:
            await client.aclose()


@asynccontextmanager
async def served(policy: Any, name: str = "policy") -> AsyncIterator[str]:
    """`policy` behind weft-train serve's app on 127.0.0.1; yields the /v1 base URL."""
    import asyncio
    import socket

    import uvicorn

    from weft_train.serve import build_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = uvicorn.Server(
        uvicorn.Config(build_app(policy, name), host="127.0.0.1", port=port, log_level="warning")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        await task


def policy_model(url: str, *, temperature: float, max_tokens: int) -> Any:
    """A `vllm:` chat model (token-capturing ChatOpenAI) on the served policy."""
    from weft_core.llm import make_chat_model

    return make_chat_model(
        {
            "provider": "vllm",
            "model": "policy",
            "base_url": url,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "max_retries": 0,
            "timeout": 600,
        }
    )


async def teacher_rows(client: Any, graphs: list[TaskGraph]) -> list[Any]:
    """SFT rows from prefix-preserving sampling with the reference policy as teacher."""
    from weft_core.models import ViewMode
    from weft_tasks.harness import ReferencePolicyModel
    from weft_train.sft import SamplingConfig, sample_trajectory

    rows = []
    config = SamplingConfig(method="prefix", k=0, system_prompt=SHORT_PROMPT)
    for g in graphs:
        teacher = ReferencePolicyModel(graph=g, mode=ViewMode.SIMUSER)
        got = await sample_trajectory(g, client, teacher, config, seed=g.id)
        if got.accepted:
            rows.append(got.sft_row())
    return rows
