"""The §5 Pro upgrade on the real sqlite (PyPI) and memory (npm) servers: the environment is
sqlite alone; memory's tools are linked in by the data edge read_query -> create_entities the
recorded episodes witness; the Pro walks (L x 2, K + 1) cross into memory, and their chains are
reverse-synthesized into tasks accepted by replay from the stored s_0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_core.models import TaskGraph
from weft_toolspace import servers
from weft_toolspace.pipeline import mine
from weft_toolspace.pro import ProConfig, run_pro
from weft_toolspace.testing import record_staff_episode
from weft_toolspace.walk import WalkConfig

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_pro_links_memory_into_sqlite_and_walks_longer(
    megamcp: Any, server_home: Path, tmp_path: Path
) -> None:
    await servers.register(megamcp, ["sqlite", "memory"], server_home)
    traces = [
        await record_staff_episode(megamcp, n, f"rec{i}")
        for i, n in enumerate(["Ada Lovelace", "Grace Hopper"])
    ]
    graph = await mine(megamcp, traces)
    run = await run_pro(
        megamcp,
        graph,
        ["sqlite"],
        tmp_path / "pro",
        base=WalkConfig(min_length=2, max_length=2, environments=1, attempts=3, seed=1),
        pro=ProConfig(),
    )
    assert run.linked_servers == ["memory"]
    linked = {t.tool: t for t in run.linked}
    assert "create_entities" in linked
    assert any("read_query" in v and "-data->" in v for v in linked["create_entities"].via)
    assert (run.base.max_length, run.base.environments) == (2, 1)
    assert (run.pro.max_length, run.pro.environments) == (4, 2)
    assert run.base.kept and run.pro.kept, run
    assert run.base.servers_covered == ["sqlite"]
    assert run.pro.servers_covered == ["memory", "sqlite"]
    assert run.pro.calls / run.pro.kept > run.base.calls / run.base.kept
    assert run.pro.environments_per_chain > run.base.environments_per_chain
    assert run.tasks, run
    task = TaskGraph.load(tmp_path / "pro" / "tasks" / f"{run.tasks[0]}.json")
    assert task.id.startswith("pro-") and task.mcps == ["memory", "sqlite"]
    assert (tmp_path / "pro" / "pro.json").exists()
