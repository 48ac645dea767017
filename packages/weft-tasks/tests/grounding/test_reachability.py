"""Reachability replay through a real MegaMCP host, from grounded initial snapshots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_core.models import FieldEquals
from weft_tasks.atomic.megamcp import Registrar, megamcp_client
from weft_tasks.compose.composer import CompositionState, compose_graph
from weft_tasks.grounding.agent import ground
from weft_tasks.grounding.reachability import (
    register_snapshots,
    replay,
    snapshot_refs,
    write_snapshots,
)

pytestmark = pytest.mark.integration


async def test_every_round_is_reachable_and_a_broken_state_is_not(
    libraries: list[Any], tmp_path: Path
) -> None:
    bundles = {
        lib.mcp: lib.bundle for lib in libraries if lib.mcp in ("crm", "helpdesk", "billing")
    }
    pool = [t for lib in libraries if lib.mcp in bundles for t in lib.tasks]
    state = compose_graph(
        CompositionState(
            graph_id="g1", profile="Complex", objective="serve Ada", nodes_wanted=6, pool=pool
        ),
        bundles,
    )
    graph = state.graph
    assert graph is not None and not state.issues
    paths = {m: bundles[m].path for m in graph.mcps}
    grounded = ground(graph, {m: bundles[m] for m in graph.mcps})
    async with megamcp_client(data_dir=tmp_path / "mm") as client:
        reg = Registrar(client)
        for upto in (1, 2, 3):  # the completion conditions hold from each round's state
            files, issues = write_snapshots(grounded.rows(upto), paths, tmp_path / "snap")
            assert issues == []
            refs = await register_snapshots(client, reg, files, paths)
            report = await replay(client, reg, graph, {m: r.uri for m, r in refs.items()}, paths)
            assert report.passed, report.diagnostic
            assert [n.node for n in report.nodes] == graph.order
            assert all(n.passed for n in report.nodes)
            assert report.final_passing  # what the reference achieved holds at the end
        # an impossible completion condition is caught at its node's checkpoint
        node = graph.node(graph.order[-1])
        bad = FieldEquals(
            id=f"{node.id}.bad",
            mcp=node.task.mcp,
            table=next(iter(node.task.entities)),
            where={"id": -1},
            field="id",
            value=1,
        )
        tampered = graph.model_copy(
            update={
                "nodes": [
                    n.model_copy(update={"checks": [*n.checks, bad]}) if n.id == node.id else n
                    for n in graph.nodes
                ]
            }
        )
        report = await replay(client, reg, tampered, {m: r.uri for m, r in refs.items()}, paths)
        assert not report.passed and report.diagnostic.startswith(f"node {node.id}")
        # a probe runs the calls and verifies nothing: it learns what they return (the ids a
        # create makes, which a later node on another MCP files)
        probe = await replay(
            client, reg, tampered, {m: r.uri for m, r in refs.items()}, paths, probe=True
        )
        assert probe.passed and [n.node for n in probe.nodes] == graph.order
        assert set(probe.outputs) == set(graph.order)
        assert probe.outputs == report.outputs | {node.id: probe.outputs[node.id]}
        # a state without the target entities is unreachable: the first lookup fails
        empty = {m: {} for m in graph.mcps}
        files, _ = write_snapshots(empty, paths, tmp_path / "snap")
        refs = await register_snapshots(client, reg, files, paths)
        report = await replay(client, reg, graph, {m: r.uri for m, r in refs.items()}, paths)
        assert not report.passed and report.diagnostic


async def test_snapshot_refs_are_content_addresses_a_fresh_host_gets_from_the_corpus(
    libraries: list[Any], tmp_path: Path
) -> None:
    """A task names its initial DBs by content; a host with an empty store (a moved corpus, a
    remote host) receives them from the corpus' copies and replays the task from them."""
    from weft_tasks.exceptions import TasksUserError
    from weft_tasks.grounding.reachability import restore_snapshots

    bundles = {lib.mcp: lib.bundle for lib in libraries if lib.mcp in ("crm", "helpdesk")}
    pool = [t for lib in libraries if lib.mcp in bundles for t in lib.tasks]
    state = compose_graph(
        CompositionState(
            graph_id="g2", profile="Simple", objective="serve Ada", nodes_wanted=2, pool=pool
        ),
        bundles,
    )
    graph = state.graph
    assert graph is not None and not state.issues
    paths = {m: bundles[m].path for m in graph.mcps}
    grounded = ground(graph, {m: bundles[m] for m in graph.mcps})
    copies = tmp_path / "corpus" / "snapshots"
    async with megamcp_client(data_dir=tmp_path / "first") as client:
        files, _ = write_snapshots(grounded.rows(3), paths, copies)
        refs = await register_snapshots(client, Registrar(client), files, paths)
    for ref in refs.values():
        assert ref.uri == f"sha256:{ref.sha256}" and str(tmp_path) not in ref.uri
    graph = graph.model_copy(update={"initial_snapshots": refs})
    async with megamcp_client(data_dir=tmp_path / "fresh") as client:
        reg = Registrar(client)
        ids = {m: await reg.mcp_id(p) for m, p in paths.items()}
        assert set(ids.values()) == {r.mcp for r in refs.values()}
        uris = {m: r.uri for m, r in refs.items()}
        with pytest.raises(Exception, match="not in the object store"):
            await client.create_group({refs[m].mcp: refs[m].uri for m in refs})
        assert await restore_snapshots(client, [graph], [tmp_path / "nowhere"]) == sorted(
            uris.values()
        )
        assert await restore_snapshots(client, [graph], [copies]) == []
        report = await replay(client, reg, graph, uris, paths)
        assert report.passed, report.diagnostic
        victim = copies / f"{next(iter(refs.values())).sha256}.sqlite"
        victim.chmod(0o644)
        victim.write_bytes(victim.read_bytes() + b"x")
        with pytest.raises(TasksUserError, match="corrupt copy"):
            await restore_snapshots(client, [graph], [copies])


@pytest.mark.slow  # registers two bundles and replays a task: 80 s on a loaded 2-core machine
async def test_a_replay_stores_its_snapshots_itself_in_its_first_request(
    libraries: list[Any], tmp_path: Path
) -> None:
    """`replay(store=)` (what composition uses): no put_snapshot requests, the same verdict, and
    the refs `snapshot_refs` wrote resolve on the host afterwards."""
    bundles = {lib.mcp: lib.bundle for lib in libraries if lib.mcp in ("crm", "helpdesk")}
    pool = [t for lib in libraries if lib.mcp in bundles for t in lib.tasks]
    state = compose_graph(
        CompositionState(
            graph_id="g3", profile="Moderate", objective="serve Ada", nodes_wanted=4, pool=pool
        ),
        bundles,
    )
    graph = state.graph
    assert graph is not None and not state.issues
    paths = {m: bundles[m].path for m in graph.mcps}
    grounded = ground(graph, {m: bundles[m] for m in graph.mcps})
    files, _ = write_snapshots(grounded.rows(3), paths, tmp_path / "snap")
    async with megamcp_client(data_dir=tmp_path / "mm") as client:
        reg = Registrar(client)
        for p in paths.values():
            await reg.mcp_id(p)
        sent: list[str] = []

        async def record(request: Any) -> None:
            sent.append(request.url.path)

        client._http.event_hooks["request"].append(record)
        refs = await snapshot_refs(reg, files, paths)
        report = await replay(
            client, reg, graph, {m: r.uri for m, r in refs.items()}, paths, store=files
        )
        assert report.passed, report.diagnostic
        assert sent[0] == "/admin/runs" and len(sent) == report.requests
        # the whole reference solution, every checkpoint and the final checks: one request
        assert report.requests == 1 and report.calls == sum(
            len(graph.node(n).task.reference_calls) for n in graph.order
        )
        assert not [p for p in sent if p.endswith("/snapshots")]
        for ref in refs.values():  # stored by the replay under the address the task names
            group = await client.create_group({ref.mcp: ref.uri})
            await client.close(group)
