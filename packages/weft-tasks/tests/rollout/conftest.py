"""Rollout tests go through a real MegaMCP host on 127.0.0.1 serving the sample bundles."""

import importlib.util
from pathlib import Path

import pytest
import pytest_asyncio

from weft_core.testing import ScriptedChatModel

_path = Path(__file__).parent / "data" / "sample_task.py"
_spec = importlib.util.spec_from_file_location("weft_tasks_tests_sample_task", _path)
assert _spec and _spec.loader
sample = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sample)


@pytest.fixture
def sample_task():
    """The sample task module (bundle builder and graph)."""
    return sample


@pytest.fixture
def scripted():
    def make(responses):
        return ScriptedChatModel(list(responses))

    return make


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def megamcp(tmp_path_factory):
    """(client, graph): a running MegaMCP with crm + helpdesk registered, and the sample task
    grounded on snapshots stored in MegaMCP's object store."""
    from weft_core.models import SnapshotRef
    from weft_megamcp.client import MegaMCPClient
    from weft_megamcp.host import MegaMCPHost
    from weft_megamcp.settings import MegaMCPSettings

    # One host per test module (each test still gets its own session groups).
    tmp_path = tmp_path_factory.mktemp("megamcp")
    settings = MegaMCPSettings(data_dir=tmp_path / "megamcp")
    async with MegaMCPHost.running(settings) as host:
        client = MegaMCPClient(host.url, host.admin_token)
        snapshots = {}
        for mcp in ("crm", "helpdesk"):
            bundle = sample.build_bundle(mcp, tmp_path / "bundles")
            rec = await client.register(bundle)
            assert rec.mcp_id == mcp
            uri = await client.put_snapshot(mcp, bundle / "seed.sqlite")
            snapshots[mcp] = SnapshotRef(mcp=mcp, uri=uri, sha256="")
        try:
            yield client, sample.sample_graph(snapshots)
        finally:
            await client.aclose()
