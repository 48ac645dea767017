from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from weft_toolspace import servers
from weft_toolspace.settings import ToolSpaceSettings


@pytest.fixture(scope="session")
def server_home() -> Path:
    """The cache folder with memory (npm) and time, sqlite (PyPI) installed, or skip."""
    home = ToolSpaceSettings().server_home
    _ok, failed = servers.install_all(["memory", "time", "sqlite"], home)
    if failed:
        pytest.skip("real MCP servers not installable: " + "; ".join(failed.values())[:300])
    return home


@pytest.fixture
async def megamcp(tmp_path: Path) -> AsyncIterator[object]:
    from weft_megamcp import MegaMCPClient, MegaMCPHost, MegaMCPSettings

    async with (
        MegaMCPHost.running(
            # the sandbox binds the servers' install folder read-only (see pipeline.hosted)
            MegaMCPSettings(
                data_dir=tmp_path / "mega",
                sandbox_ro_paths=[ToolSpaceSettings().server_home.resolve()],
            )
        ) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        yield client
