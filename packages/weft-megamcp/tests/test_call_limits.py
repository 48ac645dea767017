"""Per-call resource limits through a real host: a tool that holds the event loop is
preempted at `call_timeout_s`, a sync tool's call is answered at it, slow sync calls do not
stall other sessions, one group's calls are bounded, and results have a size cap."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from weft_core.models import ErrorKind
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.registry import MCPRecord
from weft_megamcp.settings import MegaMCPSettings

pytestmark = pytest.mark.integration

HOG = Path(__file__).parent / "data" / "resource_hog.py"


@pytest.fixture
def limits(tmp_path: Path) -> MegaMCPSettings:
    return MegaMCPSettings(
        data_dir=tmp_path / "megamcp",
        admin_token="admin-secret-token",
        offload_after_s=3600,
        call_timeout_s=2,
        max_result_chars=1024 * 1024,
        group_max_calls=1,
    )


@pytest.fixture
async def hog(limits: MegaMCPSettings) -> AsyncIterator[tuple[MegaMCPClient, MCPRecord]]:
    async with (
        MegaMCPHost.running(limits) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        yield client, await client.register(HOG)


async def _started(folder: Path, n: int, limit_s: float = 60) -> None:
    async with asyncio.timeout(limit_s):
        while (
            len(list((folder / "started").glob("*"))) < n if (folder / "started").exists() else True
        ):
            await asyncio.sleep(0.05)


async def test_cpu_bound_async_tool_is_preempted_and_others_go_on(
    hog: tuple[MegaMCPClient, MCPRecord],
) -> None:
    client, rec = hog
    g1, g2 = await client.create_group([rec.mcp_id]), await client.create_group([rec.mcp_id])
    await client.call_tool(g1, rec.mcp_id, "ping")  # sessions open before the loop is held
    await client.call_tool(g2, rec.mcp_id, "ping")
    spin = asyncio.create_task(client.call_tool(g1, rec.mcp_id, "spin", {"seconds": 40}))
    await asyncio.sleep(0)
    pong = await client.call_tool(g2, rec.mcp_id, "ping")
    async with asyncio.timeout(60):
        while pong.is_error and "timed out" in pong.text:
            # This host shares the test's event loop: a ping whose deadline started before the
            # hog took the loop runs out during the hold, and on a loaded machine the hold (2 s
            # plus the preemption's latency) can outlast more than one ping. What must hold is
            # that the other session goes on once the hog is preempted.
            await asyncio.sleep(0.1)
            pong = await client.call_tool(g2, rec.mcp_id, "ping")
    assert pong.text == "pong", pong.text
    res = await spin
    assert res.is_error and "timed out after 2 s" in res.text, res.text
    (entry,) = [e for e in (await client.ledger(g1))[rec.mcp_id] if e.tool == "spin"]
    assert entry.error_kind == ErrorKind.TIMEOUT
    again = await client.call_tool(g1, rec.mcp_id, "ping")  # the session goes on
    assert again.text == "pong"


async def test_sync_tool_is_answered_at_the_timeout_and_ledgered_when_it_returns(
    hog: tuple[MegaMCPClient, MCPRecord], tmp_path: Path
) -> None:
    client, rec = hog
    group = await client.create_group([rec.mcp_id])
    gate = tmp_path / "gate"
    res = await client.call_tool(group, rec.mcp_id, "hold", {"folder": str(gate)})
    assert res.is_error and "timed out after 2 s" in res.text, res.text
    busy = await client.call_tool(group, rec.mcp_id, "ping")
    assert busy.is_error and "'hold' timed out and is still running" in busy.text, busy.text
    (gate / "open").touch()
    async with asyncio.timeout(60):
        while (await client.call_tool(group, rec.mcp_id, "ping")).is_error:
            await asyncio.sleep(0.1)
    ledger = (await client.ledger(group))[rec.mcp_id]
    assert [e.tool for e in ledger][:2] == ["hold", "ping"]
    assert ledger[0].error_kind == ErrorKind.TIMEOUT


async def test_one_groups_calls_are_bounded_and_other_groups_go_on(
    limits: MegaMCPSettings, tmp_path: Path
) -> None:
    limits = limits.model_copy(update={"call_timeout_s": 120})
    async with MegaMCPHost.running(limits) as host, MegaMCPClient(host.url, host.admin_token) as c:
        a = await c.register(HOG, name="hog_a")
        b = await c.register(HOG, name="hog_b")
        both, other = await c.create_group([a.mcp_id, b.mcp_id]), await c.create_group([a.mcp_id])
        gate = tmp_path / "gate"
        held = asyncio.create_task(c.call_tool(both, a.mcp_id, "hold", {"folder": str(gate)}))
        await _started(gate, 1)
        queued = asyncio.create_task(c.call_tool(both, b.mcp_id, "ping"))
        assert (await c.call_tool(other, a.mcp_id, "ping")).text == "pong"
        await asyncio.sleep(0.5)
        assert not queued.done()  # group_max_calls=1: the group's second call waits its turn
        (gate / "open").touch()
        assert (await held).text == "released"
        assert (await queued).text == "pong"


@pytest.mark.slow
async def test_forty_slow_sync_calls_do_not_stall_another_session(tmp_path: Path) -> None:
    settings = MegaMCPSettings(
        data_dir=tmp_path / "megamcp", admin_token="admin-secret-token", call_timeout_s=300
    )
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        rec = await client.register(HOG)
        groups = [await client.create_group([rec.mcp_id]) for _ in range(41)]
        gate = tmp_path / "gate"
        slow = [
            asyncio.create_task(client.call_tool(g, rec.mcp_id, "hold", {"folder": str(gate)}))
            for g in groups[:40]
        ]
        try:
            await _started(gate, 40, limit_s=300)  # 40 sessions open on a loaded machine
            async with asyncio.timeout(120):  # anyio's 40 threads: waited for the gate
                pong = await client.call_tool(groups[40], rec.mcp_id, "ping")
            assert pong.text == "pong"
            assert not any(t.done() for t in slow)
        finally:
            (gate / "open").touch()
            results = await asyncio.gather(*slow)
        assert {r.text for r in results} == {"released"}


async def test_result_over_the_cap_is_a_one_line_error_and_not_ledgered(
    hog: tuple[MegaMCPClient, MCPRecord],
) -> None:
    client, rec = hog
    group = await client.create_group([rec.mcp_id])
    res = await client.call_tool(group, rec.mcp_id, "blob", {"mib": 3})
    assert res.is_error and "\n" not in res.text and "max_result_chars" in res.text, res.text
    assert "6,291,470 characters" in res.text  # the text block and the structured copy
    small = await client.call_tool(group, rec.mcp_id, "blob", {"mib": 0})
    assert not small.is_error
    entry = (await client.ledger(group))[rec.mcp_id][0]
    assert entry.is_error and len(str(entry.result)) < 500
