"""Shared fixtures: the hand-written bundle and a real in-process host on 127.0.0.1."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import GroupHandle
from weft_megamcp.registry import MCPRecord
from weft_megamcp.settings import MegaMCPSettings

DATA = Path(__file__).parent / "data"


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    """A private copy of the notes bundle (tests may edit it to make new versions)."""
    dst = tmp_path / "notes_bundle"
    shutil.copytree(DATA / "notes_bundle", dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


@pytest.fixture
def settings(tmp_path: Path) -> MegaMCPSettings:
    return MegaMCPSettings(
        data_dir=tmp_path / "megamcp", admin_token="admin-secret-token", offload_after_s=3600
    )


@pytest.fixture
async def host(settings: MegaMCPSettings) -> AsyncIterator[MegaMCPHost]:
    async with MegaMCPHost.running(settings) as h:
        yield h


@pytest.fixture
async def client(host: MegaMCPHost) -> AsyncIterator[MegaMCPClient]:
    async with MegaMCPClient(host.url, host.admin_token) as c:
        yield c


@pytest.fixture
async def notes(client: MegaMCPClient, bundle_dir: Path) -> MCPRecord:
    return await client.register(bundle_dir)


@pytest.fixture
async def group(client: MegaMCPClient, notes: MCPRecord) -> GroupHandle:
    return await client.create_group({notes.mcp_id: None})
