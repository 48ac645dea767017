"""Reachability of a grounded state, and its registration as resettable initial snapshots.

The reference solution of the whole graph is replayed through a real MegaMCP session group
started from the candidate snapshots: nodes run in the graph's stable order, each node's inputs
come from what the user gives, what its own calls retrieve and what upstream nodes output, and
after each node its checks are verified server-side at that checkpoint. The state is reachable
when every node's checkpoint passes. The final checks are the node checks that still hold on the
frozen final state, so the final verification of any rollout asks what the reference achieved.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from weft_core.models import FINAL_CHECKPOINT, CheckOutcome, SnapshotRef, TaskGraph, TaskNode
from weft_core.refs import address_digest, content_address
from weft_core.templates import scoped
from weft_megamcp.checkpoints.workspace import tar_workspace
from weft_megamcp.seeding import SEED_WORKSPACE
from weft_megamcp.service import GroupService
from weft_tasks.atomic.megamcp import BatchedGroup, Registrar, file_sha256
from weft_tasks.exceptions import TasksUserError
from weft_tasks.grounding.schema import SchemaIssue, build_db
from weft_tasks.grounding.workspace import Files, write_workspace_tree

WORKSPACE_SUFFIX = ".tar.gz"


class NodeReplay(BaseModel):
    node: str
    passed: bool
    outcomes: list[CheckOutcome] = Field(default_factory=list)
    error: str | None = None


class ReplayReport(BaseModel):
    passed: bool
    nodes: list[NodeReplay] = Field(default_factory=list)
    final_passing: list[str] = Field(
        default_factory=list, description="Ids of checks true at the end."
    )
    calls: int = 0
    requests: int = Field(default=0, description="MegaMCP requests the replay made.")
    outputs: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Per node run: the outcomes its calls returned."
    )

    @property
    def diagnostic(self) -> str:
        for n in self.nodes:
            if not n.passed:
                why = n.error or "; ".join(
                    f"{o.check_id}: {o.reason}" for o in n.outcomes if not o.passed
                )
                return f"node {n.node}: {why}"[:400]
        return ""


async def replay(
    client: GroupService,
    registrar: Registrar,
    graph: TaskGraph,
    snapshots: dict[str, str],
    bundle_paths: dict[str, Path],
    *,
    store: dict[str, Path] | None = None,
    workspaces: dict[str, Path] | None = None,
    probe: bool = False,
) -> ReplayReport:
    """Run the graph's reference solution from `snapshots` (MCP -> snapshot URI) and verify every
    checkpoint. `store` (MCP -> initial DB file) and `workspaces` (MCP -> initial workspace
    tarball) are stored by the replay's first request instead of one request each. Never raises
    for a task-level failure; that is the report. `probe` runs the calls only, verifying
    nothing, to learn what they return (`outputs`: the ids creates make); passed = every call
    ran."""
    mcp_ids = {m: await registrar.mcp_id(p) for m, p in bundle_paths.items()}
    group = BatchedGroup(
        client,
        {mcp_ids[m]: snapshots.get(m) for m in graph.mcps},
        mcp_ids,
        verifier=graph.verifier().pinned(mcp_ids),
        task_id=graph.id,
        store={mcp_ids[m]: p for m, p in (store or {}).items() if m in graph.mcps},
        workspaces={mcp_ids[m]: p for m, p in (workspaces or {}).items() if m in graph.mcps},
    )
    report = ReplayReport(passed=False)
    outputs: dict[str, dict[str, Any]] = {}
    try:
        # The whole reference solution and every checkpoint in one request: the host fills each
        # call's templates and binds (so a value an upstream node created flows downstream
        # host-side); the steps are read back node by node as the calls would have run one by one.
        ops = replay_ops(graph, group.mcp_ids, probe=probe)
        steps = iter(await group.send(ops, close=True, env={}))
        for n, node_id in enumerate(graph.order):
            node = graph.node(node_id)
            env = _node_env(node, outputs)
            next(steps, None)  # the node's set op
            run = await group.read_calls(node.task.reference_calls, env, steps)
            if not run.ok:
                report.nodes.append(NodeReplay(node=node_id, passed=False, error=run.diagnostic))
                return report
            outputs[node_id] = {k: run.env[k] for k in node.outcomes if k in run.env}
            if probe:
                report.nodes.append(NodeReplay(node=node_id, passed=True))
                continue
            step = next(steps, None)
            res = step.verification if step is not None else None
            if res is None:
                error = (step.error if step is not None else None) or "checkpoint not verified"
                report.nodes.append(NodeReplay(node=node_id, passed=False, error=error))
                return report
            report.nodes.append(
                NodeReplay(
                    node=node_id,
                    passed=bool(res.passed) and not res.error,
                    outcomes=list(res.outcomes),
                    error=res.error,
                )
            )
            if not report.nodes[-1].passed:
                return report
            if n == len(graph.order) - 1:
                step = next(steps, None)
                final = step.verification if step is not None else None
                if final is None:
                    why = (step.error if step is not None else None) or "final checks not run"
                    report.nodes.append(NodeReplay(node=FINAL_CHECKPOINT, passed=False, error=why))
                    return report
                report.final_passing = [o.check_id for o in final.outcomes if o.passed]
        report.passed = True
        return report
    finally:
        report.calls = group.calls
        report.requests = group.requests
        report.outputs = outputs
        await group.close()


def _node_env(node: TaskNode, outputs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A node's values before its calls: what the user gives and what upstream nodes output."""
    env: dict[str, Any] = {}
    for i in node.inputs:
        if (
            i.source == "upstream"
            and i.from_node in outputs
            and i.from_output in outputs[i.from_node]
        ):
            env[i.name] = outputs[i.from_node][i.from_output]
        elif i.source != "retrieved":
            env[i.name] = i.value
    return env


def _scope(position: int) -> str:
    return f"__n{position}__"


def replay_ops(graph: TaskGraph, mcp_ids: dict[str, str], *, probe: bool) -> list[dict[str, Any]]:
    """The batch ops of a graph's replay, for a batch with an env: per node a `set` op (its given
    inputs, and references to the upstream outputs it takes), its calls with their templates and
    binds scoped to the node, and (unless `probe`) its checkpoint; the last node's checkpoint is
    followed by the final checks. What `_node_env` computes client-side, the host computes
    from the same results."""
    position = {node_id: k for k, node_id in enumerate(graph.order)}
    ops: list[dict[str, Any]] = []
    for k, node_id in enumerate(graph.order):
        node = graph.node(node_id)
        scope = _scope(k)
        values: dict[str, Any] = {}
        refs: dict[str, str] = {}
        for i in node.inputs:
            if i.source != "retrieved":
                values[scope + i.name] = i.value
            upstream = position.get(i.from_node or "")
            if (
                i.source == "upstream"
                and upstream is not None
                and upstream < k
                and i.from_output in graph.node(graph.order[upstream]).outcomes
            ):
                refs[scope + i.name] = _scope(upstream) + str(i.from_output)
        ops.append({"op": "set", "values": values, "refs": refs})
        mcp = mcp_ids.get(node.task.mcp, node.task.mcp)
        for call in node.task.reference_calls:
            ops.append(
                {
                    "op": "call",
                    "mcp": mcp,
                    "tool": call.tool,
                    "arguments": scoped(call.arguments, scope),
                    "bind": {scope + name: path for name, path in call.bind.items()},
                }
            )
        if not probe:
            ops.append({"op": "verify", "checkpoint": node_id, "diff": False})
    if not probe and graph.order:
        ops.append({"op": "verify"})
    return ops


def write_snapshots(
    rows: dict[str, dict[str, list[dict[str, Any]]]], bundle_paths: dict[str, Path], folder: Path
) -> tuple[dict[str, Path], list[SchemaIssue]]:
    """One initial DB per MCP under `folder`, content-addressed (`<sha256>.sqlite`)."""
    out: dict[str, Path] = {}
    issues: list[SchemaIssue] = []
    folder.mkdir(parents=True, exist_ok=True)
    for mcp, bundle_path in bundle_paths.items():
        tmp = folder / f".build-{mcp}-{id(rows)}.sqlite"
        issues += build_db(mcp, bundle_path / "seed.sqlite", rows.get(mcp, {}), tmp)
        sha = file_sha256(tmp)
        final = folder / f"{sha}.sqlite"
        if final.exists():
            tmp.unlink()
        else:
            tmp.replace(final)
        out[mcp] = final
    return out, issues


def write_workspaces(
    files: dict[str, Files], bundle_paths: dict[str, Path], folder: Path
) -> dict[str, Path]:
    """One initial workspace per file MCP with grounded files: the bundle's seed workspace plus
    the files, as the tarball MegaMCP's checkpoints write (`tar_workspace`: deterministic, so
    equal trees share a name), content-addressed (`<sha256>.tar.gz`) under `folder`."""
    out: dict[str, Path] = {}
    folder.mkdir(parents=True, exist_ok=True)
    for mcp, grounded in files.items():
        if not grounded:
            continue
        with tempfile.TemporaryDirectory(dir=folder, prefix=".ws-") as tmp:
            tree = Path(tmp) / "workspace"
            write_workspace_tree(bundle_paths[mcp] / SEED_WORKSPACE, grounded, tree)
            data = tar_workspace(tree)
        sha = hashlib.sha256(data).hexdigest()
        final = folder / f"{sha}{WORKSPACE_SUFFIX}"
        if not final.exists():  # write, then publish the name: a reader never sees half
            part = folder / f".{sha}.part-{id(data)}"
            part.write_bytes(data)
            part.replace(final)
        out[mcp] = final
    return out


def _workspace_sha(path: Path) -> str:
    return path.name.removesuffix(WORKSPACE_SUFFIX)


async def snapshot_refs(
    registrar: Registrar,
    files: dict[str, Path],
    bundle_paths: dict[str, Path],
    workspaces: dict[str, Path] | None = None,
) -> dict[str, SnapshotRef]:
    """The refs `register_snapshots` returns, for files a replay stores itself (`replay(store=)`):
    content addresses, so they need no request. `workspaces`: MCP -> its initial workspace's
    tarball (`write_workspaces`)."""
    ws = workspaces or {}
    return {
        mcp: SnapshotRef(
            mcp=await registrar.mcp_id(bundle_paths[mcp]),
            uri=content_address(path.stem),
            sha256=path.stem,
            workspace_uri=content_address(_workspace_sha(ws[mcp])) if mcp in ws else None,
        )
        for mcp, path in files.items()
    }


async def register_snapshots(
    client: GroupService,
    registrar: Registrar,
    files: dict[str, Path],
    bundle_paths: dict[str, Path],
) -> dict[str, SnapshotRef]:
    """Store each initial DB in MegaMCP's object store; the refs go into `TaskGraph.initial_snapshots`.

    A ref names the DB by content address (`sha256:<hex>`), whatever the host calls the blob, so
    the task graph is the same wherever the corpus and the host's store lie."""
    refs: dict[str, SnapshotRef] = {}
    for mcp, path in files.items():
        mcp_id = await registrar.mcp_id(bundle_paths[mcp])
        await client.put_snapshot(mcp_id, path)
        refs[mcp] = SnapshotRef(mcp=mcp_id, uri=content_address(path.stem), sha256=path.stem)
    return refs


async def restore_snapshots(
    client: GroupService, graphs: Iterable[TaskGraph], folders: Iterable[Path]
) -> list[str]:
    """Put every initial DB and workspace the graphs name into the host's store from a corpus'
    copies (`<folder>/<sha256>.sqlite`, `<folder>/<sha256>.tar.gz`), so a moved corpus runs on any host, even one with an empty
    store; idempotent (content-addressed). Returns the refs no folder holds a copy of (they
    must already be in the host's store)."""
    dirs = list(folders)
    missing: list[str] = []
    for graph in graphs:
        for ref in graph.initial_snapshots.values():
            name = f"{ref.sha256}.sqlite"
            copy = next((d / name for d in dirs if (d / name).is_file()), None)
            if copy is None:
                missing.append(ref.uri)
                continue
            if file_sha256(copy) != ref.sha256:
                raise TasksUserError(f"{copy}: content does not match its name (corrupt copy)")
            await client.put_snapshot(ref.mcp, copy)
            if ref.workspace_uri is None:
                continue
            sha = address_digest(ref.workspace_uri) or ""
            name = f"{sha}{WORKSPACE_SUFFIX}"
            copy = next((d / name for d in dirs if (d / name).is_file()), None)
            if copy is None:
                missing.append(ref.workspace_uri)
                continue
            if file_sha256(copy) != sha:
                raise TasksUserError(f"{copy}: content does not match its name (corrupt copy)")
            await client.put_workspace(ref.mcp, copy)
    return sorted(set(missing))
