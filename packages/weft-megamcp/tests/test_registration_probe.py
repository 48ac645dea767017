"""Registration never runs module code in the host, and never waits without a limit.

The issue: a module calling `os._exit(0)` at import ended the host (exit 0, so a supervisor would
not restart it); a command that never answers `tools/list` hung the admin call and outlived it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.settings import MegaMCPSettings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HANGING_COMMAND = """\
import sys, time
sys.stdin.readline()  # reads `initialize` and never answers it
time.sleep(3600)
"""


def _running(marker: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info.get("cmdline") or []
        if any(marker in part for part in cmd):
            out.append(p)
    return out


async def _gone(marker: str, within_s: float = 30.0) -> bool:
    import asyncio

    deadline = time.monotonic() + within_s
    while _running(marker):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.2)
    return True


# Long enough for a real probe (a Python start and a fastmcp import) on a loaded 2-core machine;
# the hanging cases wait all of it (every test here starts probe processes: all marked slow).
LIMIT_S = 30


@pytest.fixture
def probe_settings(tmp_path: Path) -> MegaMCPSettings:
    return MegaMCPSettings(
        data_dir=tmp_path / "megamcp", admin_token="adm-probe", register_timeout_s=LIMIT_S
    )


async def test_module_exiting_at_import_does_not_end_the_host(
    tmp_path: Path, probe_settings: MegaMCPSettings
):
    module = tmp_path / "exits.py"
    module.write_text(
        "import os\nfrom fastmcp import FastMCP\nmcp = FastMCP('exits')\nos._exit(0)\n"
    )
    async with (
        MegaMCPHost.running(probe_settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        with pytest.raises(MegaMCPUserError) as err:
            await client.register(module)
        msg = str(err.value)
        assert "\n" not in msg and "ended the probe process (exit 0)" in msg, msg
        # The host (this very process) is alive and still registers a good module.
        good = tmp_path / "good.py"
        good.write_text(
            "from fastmcp import FastMCP\nmcp = FastMCP('good')\n\n"
            "@mcp.tool\ndef ping() -> str:\n    return 'pong'\n"
        )
        rec = await client.register(good)
        assert [t.name for t in rec.tools] == ["ping"]


async def test_module_hanging_at_import_is_stopped_at_the_limit(
    tmp_path: Path, probe_settings: MegaMCPSettings
):
    module = tmp_path / "hangs_on_import.py"
    module.write_text("import time\ntime.sleep(3600)\n")
    async with (
        MegaMCPHost.running(probe_settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        with pytest.raises(MegaMCPUserError) as err:
            await client.register(module)
        assert "register_timeout_s" in str(err.value) and "\n" not in str(err.value)
        assert await _gone("weft_megamcp._probe")


async def test_command_never_answering_tools_list_is_stopped_at_the_limit(
    tmp_path: Path, probe_settings: MegaMCPSettings
):
    script = tmp_path / "never_answers_tools_list.py"
    script.write_text(HANGING_COMMAND)
    async with (
        MegaMCPHost.running(probe_settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        with pytest.raises(MegaMCPUserError) as err:
            await client.register_command([sys.executable, str(script)], name="silent")
        msg = str(err.value)
        assert f"did not answer tools/list within {LIMIT_S} s" in msg and "\n" not in msg, msg
        assert await _gone(script.name), "the silent command outlived its registration"


async def test_silent_command_does_not_outlive_a_killed_host(tmp_path: Path):
    import asyncio

    script = tmp_path / "silent_until_host_dies.py"
    script.write_text(HANGING_COMMAND)
    settings = MegaMCPSettings(
        data_dir=tmp_path / "megamcp", admin_token="adm-probe-2", register_timeout_s=600
    )
    host = await MegaMCPHost.start(settings, subprocess=True)
    try:
        async with MegaMCPClient(host.url, host.admin_token, timeout_s=600) as client:
            pending = asyncio.create_task(
                client.register_command([sys.executable, str(script)], name="silent")
            )
            deadline = time.monotonic() + 60
            while not _running(script.name):
                assert time.monotonic() < deadline, "the command never started"
                await asyncio.sleep(0.2)
            assert host._proc is not None
            host._proc.kill()  # kill -9 of the host while the admin call waits
            await asyncio.to_thread(host._proc.wait)
            assert await _gone(script.name), "the silent command outlived the killed host"
            pending.cancel()
            with pytest.raises((asyncio.CancelledError, Exception)):
                await pending
    finally:
        await host.stop()
