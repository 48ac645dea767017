"""Idle management: an idle group's runtime is offloaded and reloaded transparently."""

from __future__ import annotations

import asyncio
import time

import pytest

from weft_megamcp import loader
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import RuntimeState
from weft_megamcp.settings import MegaMCPSettings

pytestmark = pytest.mark.integration


async def test_idle_group_is_offloaded_then_reloaded(tmp_path, bundle_dir):
    settings = MegaMCPSettings(
        data_dir=tmp_path / "mm",
        offload_after_s=0.3,
        idle_scan_interval_s=0.1,
        admin_token="adm-token-1",
    )
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        rec = await client.register(bundle_dir)
        g = await client.create_group([rec.mcp_id])
        m = rec.mcp_id
        await client.call_tool(g, m, "add_contact", {"name": "Kept", "email": "k@x.y"})
        await client.call_tool(g, m, "write_note", {"path": "keep.txt", "text": "still here"})
        # The module's package name, computed rather than read from the runtime: on a loaded
        # machine the idle manager may already have offloaded the group by the next line.
        pkg = loader.package_name(m, rec.version, rec.source_hash[:10])
        deadline = time.monotonic() + 30
        while (await client.info(g)).runtime != RuntimeState.OFFLOADED:
            assert time.monotonic() < deadline, "the idle group was not offloaded within 30 s"
            await asyncio.sleep(0.05)
        assert not loader.is_loaded(pkg)  # module state dropped with the last loaded group
        # The same token, the same state: the next call reloads transparently.
        names = [
            c["name"] for c in (await client.call_tool(g, m, "list_contacts")).structured["result"]
        ]
        assert "Kept" in names
        assert (
            await client.call_tool(g, m, "read_note", {"path": "keep.txt"})
        ).text == "still here"


async def test_long_idle_group_is_evicted_then_reloaded(tmp_path, bundle_dir):
    settings = MegaMCPSettings(
        data_dir=tmp_path / "mm",
        offload_after_s=0.2,
        evict_after_s=0.4,
        idle_scan_interval_s=0.1,
        checkpoint_debounce_s=0.05,
        admin_token="adm-token-2",
    )
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        rec = await client.register(bundle_dir)
        g = await client.create_group([rec.mcp_id])
        await client.call_tool(g, rec.mcp_id, "add_contact", {"name": "Evicted", "email": "e@x.y"})
        # A deadline, not a count of polls: on a loaded machine each poll itself takes a while.
        deadline = time.monotonic() + 30
        while (await client.info(g)).runtime != RuntimeState.EVICTED:
            assert time.monotonic() < deadline, "the idle group was not evicted within 30 s"
            await asyncio.sleep(0.05)
        assert host.core is not None
        group = host.core.manager.get(g.group_id)
        async with group.reload_lock:  # the eviction that published EVICTED has finished
            assert not group.sessions[rec.mcp_id].db_path.exists()
        assert "Evicted" in (await client.call_tool(g, rec.mcp_id, "list_contacts")).text


class _GatedRelease:
    """The module runtime, except that `release` waits on a gate: a transition is parked
    mid-quiesce with the session locks held, where the host's stop may cancel it."""

    def __init__(self, real: object) -> None:
        self.real = real
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    async def release(self, session: object) -> None:
        self.entered.set()
        await self.gate.wait()


async def test_cancelled_transition_gives_back_the_session_locks(host, group):
    # The host's stop cancels the idle loop; an offload cancelled while it held the session
    # locks used to keep them, and the stop's own quiesce then waited for them forever.
    assert host.core is not None
    manager = host.core.manager
    hosted = manager.get(group.group_id)
    gated = _GatedRelease(manager.modules)
    manager.modules = gated
    try:
        offload = asyncio.create_task(manager.offload(group.group_id))
        await asyncio.wait_for(gated.entered.wait(), 30)
        assert all(s.lock.locked() for s in hosted.sessions.values())
        offload.cancel()
        with pytest.raises(asyncio.CancelledError):
            await offload
    finally:
        manager.modules = gated.real
    leaked = [s for s in hosted.sessions.values() if s.lock.locked()]
    for s in leaked:  # so that a regression fails here instead of hanging the host's stop
        s.lock.release()
    assert not leaked, "a cancelled offload kept session locks"
    assert not hosted.reload_lock.locked()
