"""Initial workspaces of file MCPs: grounded files go into the task's snapshot, the reference
replay still passes from them, and the snapshot, restored on a fresh host, holds the files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_core.models import ReturnContains, WorkspaceFile
from weft_tasks.atomic.megamcp import Registrar, megamcp_client
from weft_tasks.compose.composer import CompositionState, compose_graph
from weft_tasks.grounding.agent import ground
from weft_tasks.grounding.reachability import (
    replay,
    restore_snapshots,
    snapshot_refs,
    write_snapshots,
    write_workspaces,
)
from weft_tasks.grounding.workspace import ground_workspaces

pytestmark = pytest.mark.integration


def _graph(libraries: list[Any]) -> tuple[Any, dict[str, Any]]:
    bundles = {lib.mcp: lib.bundle for lib in libraries if lib.mcp in ("crm", "notes")}
    pool = [t for lib in libraries if lib.mcp in bundles for t in lib.tasks]
    state = compose_graph(
        CompositionState(
            graph_id="ws1", profile="Complex", objective="brief Ada", nodes_wanted=6, pool=pool
        ),
        bundles,
    )
    assert state.graph is not None and not state.issues
    assert "notes" in state.graph.mcps
    return state.graph, bundles


async def test_composed_file_task_snapshot_restored_holds_its_files(
    libraries: list[Any], tmp_path: Path
) -> None:
    graph, bundles = _graph(libraries)
    paths = {m: bundles[m].path for m in graph.mcps}
    grounded = ground(graph, {m: bundles[m] for m in graph.mcps})
    files = ground_workspaces(graph, {m: bundles[m] for m in graph.mcps})
    seeded = files.files()["notes"]
    assert seeded, files.dropped
    assert set(files.rounds[0].get("notes", {})) <= set(seeded)
    folder = tmp_path / "corpus" / "snapshots"
    dbs, issues = write_snapshots(grounded.rows(), paths, folder)
    assert issues == []
    tarballs = write_workspaces(files.files(), paths, folder)
    async with megamcp_client(data_dir=tmp_path / "mm1") as client:
        reg = Registrar(client)
        refs = await snapshot_refs(reg, dbs, paths, tarballs)
        assert refs["notes"].workspace_uri is not None and refs["crm"].workspace_uri is None
        report = await replay(
            client,
            reg,
            graph,
            {m: r.uri for m, r in refs.items()},
            paths,
            store=dbs,
            workspaces=tarballs,
        )
        assert report.passed, report.diagnostic
    graph = graph.model_copy(update={"initial_snapshots": refs})
    # A fresh host with an empty store: the corpus' copies are put back, then a group made
    # from the refs alone shows the grounded files through the MCP's own tools.
    async with megamcp_client(data_dir=tmp_path / "mm2") as client:
        reg = Registrar(client)
        ids = {m: await reg.mcp_id(p) for m, p in paths.items()}
        mcp_id = ids["notes"]
        assert await restore_snapshots(client, [graph], [folder]) == []
        ref = graph.initial_snapshots["notes"]
        group = await client.create_group(
            {mcp_id: ref.uri}, workspaces={mcp_id: ref.workspace_uri or ""}
        )
        try:
            for path, content in seeded.items():
                res = await client.call_tool(group, mcp_id, "read_note", {"path": path})
                assert not res.is_error and res.text == content, path
        finally:
            await client.close(group)


def test_a_file_a_check_could_see_is_not_grounded(libraries: list[Any]) -> None:
    graph, bundles = _graph(libraries)
    node = next(n for n in graph.nodes if n.task.mcp == "notes")
    written = ground_workspaces(graph, bundles).files()["notes"]
    target = next(iter(written))
    # A check that lists the folder and looks for the file's name, or asks only that it
    # exists, would pass on the grounded file alone: the file must go.
    for check in (
        ReturnContains(id="x.list", tool="list_notes", value=Path(target).name),
        WorkspaceFile(id="x.exists", path=target),
    ):
        bad = graph.model_copy(
            update={
                "nodes": [
                    n.model_copy(update={"checks": [*n.checks, check]}) if n is node else n
                    for n in graph.nodes
                ]
            }
        )
        out = ground_workspaces(bad, bundles)
        assert target not in out.files().get("notes", {})
        assert any(target in d for d in out.dropped)


def test_a_written_path_that_climbs_out_is_not_grounded(tmp_path: Path) -> None:
    from weft_tasks.exceptions import TasksUserError
    from weft_tasks.grounding.workspace import write_workspace_tree

    with pytest.raises(TasksUserError, match="lands outside the workspace"):
        write_workspace_tree(None, {"../../escape.txt": "x"}, tmp_path / "ws")
    assert not (tmp_path / "escape.txt").exists()
