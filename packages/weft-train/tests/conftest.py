"""A tiny from-scratch policy shared by the weft-train tests (built once per session, ~27k params)."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio
import torch

# Tiny models on a shared 2-core machine: one intra-op thread is ~10x faster than two that fight
# the other processes for the cores.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_train.policy import init_policy

    return init_policy(tmp_path_factory.mktemp("policy") / "tiny", "tiny", seed=0)


@pytest.fixture(scope="session")
def tiny_policy(tiny_policy_dir: Path):  # type: ignore[no-untyped-def]
    from weft_train.policy import Policy

    return Policy.load(tiny_policy_dir)


_SAMPLE = (
    Path(__file__).resolve().parents[2]
    / "weft-tasks"
    / "tests"
    / "rollout"
    / "data"
    / "sample_task.py"
)


def _sample_module():  # type: ignore[no-untyped-def]
    import importlib.util
    import sys

    name = "weft_train_tests_sample_task"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _SAMPLE)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def megamcp(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """(client, graph): a real MegaMCP host on 127.0.0.1 serving weft-tasks' sample CRM and
    helpdesk bundles, and the sample three-node task grounded on their stored snapshots."""
    from weft_core.models import SnapshotRef
    from weft_megamcp.client import MegaMCPClient
    from weft_megamcp.host import MegaMCPHost
    from weft_megamcp.settings import MegaMCPSettings

    sample = _sample_module()
    tmp = tmp_path_factory.mktemp("megamcp")
    async with MegaMCPHost.running(MegaMCPSettings(data_dir=tmp / "megamcp")) as host:
        client = MegaMCPClient(host.url, host.admin_token)
        snapshots = {}
        for mcp in ("crm", "helpdesk"):
            bundle = sample.build_bundle(mcp, tmp / "bundles")
            await client.register(bundle)
            uri = await client.put_snapshot(mcp, bundle / "seed.sqlite")
            snapshots[mcp] = SnapshotRef(mcp=mcp, uri=uri, sha256="")
        try:
            yield client, sample.sample_graph(snapshots)
        finally:
            await client.aclose()
