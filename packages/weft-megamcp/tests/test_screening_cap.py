"""The screened per-process session cap is one setting (WEFT_MEGAMCP_SCREEN_LIMITED_CAP) with
one behaviour: in one process and with prefork workers, the group past it gets the same 503
and one line naming the cap, and a closed group frees its place."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.exceptions import MegaMCPRuntimeError
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.settings import MegaMCPSettings

pytestmark = pytest.mark.integration

LIMITED = Path(__file__).parent / "data" / "limited_cache.py"


async def _fill(url: str, token: str, per_process: int, processes: int) -> None:
    async with MegaMCPClient(url, token) as client:
        rec = await client.register(LIMITED)
        assert rec.metadata["screen"]["load_class"] == "limited"
        groups = [await client.create_group([rec.mcp_id]) for _ in range(per_process * processes)]
        async with httpx.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http:
            resp = await http.post(f"{url}/admin/groups", json={"mcps": {rec.mcp_id: None}})
        assert resp.status_code == 503, resp.text
        detail = resp.json()["detail"]
        assert "\n" not in detail
        assert f"allows {per_process} per process" in detail
        assert "WEFT_MEGAMCP_SCREEN_LIMITED_CAP" in detail
        assert f"all {processes} serving process(es) are full" in detail
        await client.close(groups[0])
        again = await client.create_group([rec.mcp_id])  # a closed group's place is free
        assert (await client.call_tool(again, rec.mcp_id, "warm", {"key": "k"})).text == "k"


async def test_cap_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEFT_MEGAMCP_SCREEN_LIMITED_CAP", "2")
    settings = MegaMCPSettings(data_dir=tmp_path / "m", admin_token="admin-secret-token")
    async with MegaMCPHost.running(settings) as host:
        await _fill(host.url, host.admin_token, per_process=2, processes=1)


@pytest.mark.slow
async def test_cap_with_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEFT_MEGAMCP_SCREEN_LIMITED_CAP", "2")
    settings = MegaMCPSettings(data_dir=tmp_path / "m", admin_token="admin-secret-token", workers=2)
    async with MegaMCPHost.running(settings) as host:
        await _fill(host.url, host.admin_token, per_process=2, processes=2)


async def test_the_client_waits_for_a_place_then_gives_up_when_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEFT_MEGAMCP_SCREEN_LIMITED_CAP", "1")
    settings = MegaMCPSettings(data_dir=tmp_path / "m", admin_token="admin-secret-token")
    async with MegaMCPHost.running(settings) as host:
        async with MegaMCPClient(host.url, host.admin_token, placement_wait_s=120) as client:
            rec = await client.register(LIMITED)
            first = await client.create_group([rec.mcp_id])
            waiting = asyncio.create_task(client.create_group([rec.mcp_id]))
            await asyncio.sleep(0.5)
            assert not waiting.done()  # the cap of 1 is taken: the creation waits, not fails
            await client.close(first)
            second = await waiting  # the closed group's place went to the waiting creation
            assert (await client.call_tool(second, rec.mcp_id, "warm", {"key": "k"})).text == "k"
        async with MegaMCPClient(host.url, host.admin_token, placement_wait_s=0) as impatient:
            with pytest.raises(MegaMCPRuntimeError, match="no room for another session"):
                await impatient.create_group([rec.mcp_id])


async def test_the_cap_given_in_settings_is_the_one_placed_by(tmp_path: Path) -> None:
    """The cap travels in MegaMCPSettings (as `weft run` sizes it), not in os.environ."""
    settings = MegaMCPSettings(
        data_dir=tmp_path / "m", admin_token="admin-secret-token", screen_limited_cap=2
    )
    async with MegaMCPHost.running(settings) as host:
        await _fill(host.url, host.admin_token, per_process=2, processes=1)


@pytest.mark.slow
async def test_a_subprocess_host_serves_with_the_settings_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: `running(subprocess=True)` passed the child only host, port, workers and data
    dir; every other setting came from this process's environment instead of `settings`."""
    settings = MegaMCPSettings(
        data_dir=tmp_path / "m", admin_token="admin-secret-token", screen_limited_cap=2
    )
    monkeypatch.setenv("WEFT_MEGAMCP_SCREEN_LIMITED_CAP", "5")  # must not reach the child
    async with MegaMCPHost.running(settings, subprocess=True) as host:
        await _fill(host.url, host.admin_token, per_process=2, processes=1)
