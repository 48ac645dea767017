"""Algorithm 1 on the real sqlite (PyPI) and memory (npm) servers: record two trajectories, mine
(state edges witnessed by counterfactual replay), cluster, walk with rollback, synthesize tasks
accepted by replay from s0; a wrong check is caught by the replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_core.models import TaskGraph
from weft_toolspace import servers
from weft_toolspace.clusters import cluster, environment_of
from weft_toolspace.models import EdgeKind
from weft_toolspace.pipeline import mine
from weft_toolspace.synthesize import candidates, replay, synthesize
from weft_toolspace.testing import record_staff_episode
from weft_toolspace.walk import WalkConfig, Walker

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_walks_become_replay_verified_task_graphs(megamcp: Any, server_home: Path) -> None:
    await servers.register(megamcp, ["sqlite", "memory"], server_home)
    traces = [
        await record_staff_episode(megamcp, n, f"rec{i}")
        for i, n in enumerate(["Ada Lovelace", "Grace Hopper"])
    ]
    graph = await mine(megamcp, traces)
    kinds = {
        (e.source.split("/")[1].split("(")[0], e.target.split("/")[1].split("(")[0], e.kind)
        for e in graph.edges
    }
    assert ("write_query", "read_query", EdgeKind.STATE) in kinds
    assert ("read_query", "create_entities", EdgeKind.DATA) in kinds
    assert ("create_entities", "open_nodes", EdgeKind.STATE) in kinds
    envs = cluster(graph, seed=0)
    walker = Walker(
        megamcp,
        graph,
        environment_of(envs),
        WalkConfig(min_length=5, max_length=5, environments=1, attempts=3, seed=1),
    )
    chains = await walker.run()
    assert walker.stats.tried == 3 and chains, walker.stats
    assert all(len(c.steps) == 5 for c in chains)
    tasks, stats = await synthesize(megamcp, chains)
    assert tasks and stats.accepted == len(tasks), stats
    task = TaskGraph.model_validate(tasks[0].model_dump(mode="json", by_alias=True))
    kinds_of_checks = {c.kind for c in task.final_checks}
    assert "row_exists" in kinds_of_checks and "workspace_file" in kinds_of_checks
    assert "create_entities" not in task.objective and "sqlite" not in task.objective

    # A wrong V_state check (a row that was never written) fails the replay from s0.
    cand = candidates(chains[0])
    wrong = next(c for c, _ in cand.final if c.kind == "row_exists")
    bad = wrong.model_copy(update={"where": {"name": "Nobody"}})
    cand.final = [(bad if c is wrong else c, g) for c, g in cand.final]
    outcome, _ = await replay(megamcp, cand)
    assert not outcome.passed and wrong.id in outcome.failed_checks
