"""Benchmark: what a composed corpus actually contains (issue 11's figures, paper §3.1.2 / App. A).

    uv run python benchmarks/tasks/corpus_stats.py OUT [--json FILE]

OUT is a `compose_1000.py --out` folder (OUT/lib with the certified libraries, OUT/tasks with
the composed corpus and its snapshots). Nothing here trusts the composer's own report: every
figure is recomputed from the task graphs, the library files and the SQLite snapshots.

- data flow: node inputs by source; information edges that cross MCPs; of those, the ones carrying
  a value the user never gave (no given input of the task holds it) and the ones carrying an id a
  create call made upstream; share of multi-MCP tasks with at least one edge of a value never
  given (goal >= 60%), and with at least one edge of an id created upstream;
- length: median / max atomic-task turns per profile;
- contradictions: tasks where a later node undoes an earlier node's effect on the same object
  (`weft_tasks.compose.lifecycle`; goal 0);
- atomic chains: retained tasks whose chain has >= 2 distinct tools (goal >= 40%), and candidates
  Algorithm 1 generated after its first round;
- objectives: distinct objective templates (values masked) among the tasks;
- grounding: snapshots with rows that are not in the bundle's seed (new entities), with a
  near-duplicate of a target row (distractor: another row whose name reads almost the same, or
  for a row with no name - an account, an order - another row of the same parents whose other
  values read almost the same); for a file MCP, the files its restored initial
  workspace holds beyond the bundle's seed (new entities) and a new file named almost like one a
  node writes (distractor): the corpus' snapshot copies go into a fresh MegaMCP host, a group
  is created from the task's refs and the MCP's listing tool looks (a ref's declared
  `workspace_uri` counts for nothing);
- views: nodes whose SimUser request differs between partial and full (and vague and full),
  among nodes with an input the agent can retrieve (goal >= 50%).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import re
import sqlite3
import statistics
import tempfile
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

from weft_core.console import summary_table
from weft_core.models import Disclosure, TaskGraph, ViewMode
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.atomic.library import MCPLibrary, load_library
from weft_tasks.compose.lifecycle import TransitionGraph, contradictions
from weft_tasks.views import build_view


def _pct(a: int, b: int) -> float:
    return round(100.0 * a / b, 1) if b else 0.0


def _table_rows(db: Path, table: str) -> list[dict[str, Any]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        con.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in con.execute(f'SELECT * FROM "{table}"')]
        except sqlite3.OperationalError:
            return []
    finally:
        con.close()


def _created_outputs(graph: TaskGraph, bundles: dict[str, BundleView]) -> dict[str, set[str]]:
    """Per node: outputs bound from a create call (an id or value that did not exist before)."""
    out: dict[str, set[str]] = {}
    for n in graph.nodes:
        b = bundles.get(n.task.mcp)
        for call in n.task.reference_calls:
            c = b.contract(call.tool) if b else None
            if c is not None and c.operation == "create":
                out.setdefault(n.id, set()).update(call.bind)
    return out


def flow_stats(graphs: list[TaskGraph], bundles: dict[str, BundleView]) -> dict[str, Any]:
    sources: Counter[str] = Counter()
    cross = never_given = created = 0
    multi = multi_with = multi_created = 0
    for g in graphs:
        mcp_of = {n.id: n.task.mcp for n in g.nodes}
        given = {
            json.dumps(i.value, sort_keys=True, default=str)
            for n in g.nodes
            for i in n.inputs
            if i.source == "given" and i.value is not None
        }
        made = _created_outputs(g, bundles)
        hit = hit_created = False
        for n in g.nodes:
            for i in n.inputs:
                sources[i.source] += 1
                if i.source != "upstream" or mcp_of.get(i.from_node or "") in (None, n.task.mcp):
                    continue
                cross += 1
                fresh = json.dumps(i.value, sort_keys=True, default=str) not in given
                never_given += fresh
                new_id = (i.from_output or "") in made.get(i.from_node or "", set())
                created += new_id
                hit |= fresh
                hit_created |= new_id and fresh
        if len(g.mcps) >= 2:
            multi += 1
            multi_with += hit
            multi_created += hit_created
    total = sum(sources.values())
    return {
        "node_inputs": total,
        "inputs_given": sources["given"],
        "inputs_upstream": sources["upstream"],
        "inputs_retrieved": sources["retrieved"],
        "cross_mcp_value_inputs": cross,
        "cross_mcp_never_given": never_given,
        "cross_mcp_created_ids": created,
        "multi_mcp_tasks": multi,
        "multi_mcp_with_fresh_edge_pct": _pct(multi_with, multi),
        "multi_mcp_with_created_id_edge_pct": _pct(multi_created, multi),
    }


def length_stats(graphs: list[TaskGraph]) -> dict[str, Any]:
    by: dict[str, list[int]] = {}
    for g in graphs:
        by.setdefault(g.profile, []).append(len(g.nodes))
    rows = {
        p: {"median": statistics.median(v), "max": max(v), "tasks": len(v)} for p, v in by.items()
    }
    allv = [len(g.nodes) for g in graphs]
    rows["(all)"] = {
        "median": statistics.median(allv) if allv else 0,
        "max": max(allv, default=0),
        "tasks": len(allv),
    }
    return rows


def contradiction_stats(graphs: list[TaskGraph], bundles: dict[str, BundleView]) -> dict[str, Any]:
    tg = TransitionGraph({m: b.contracts.contracts for m, b in bundles.items()})
    kinds: Counter[str] = Counter()
    bad = 0
    examples: list[str] = []
    for g in graphs:
        found = contradictions(g, tg)
        bad += bool(found)
        for c in found:
            kinds[c.kind] += 1
        if found and len(examples) < 3:
            examples.append(f"{g.id}: {found[0].message}")
    return {
        "tasks_contradictory": bad,
        "tasks_contradictory_pct": _pct(bad, len(graphs)),
        "by_kind": dict(kinds),
        "examples": examples,
    }


def chain_stats(libs: list[MCPLibrary], lib_root: Path) -> dict[str, Any]:
    chains = [t.tool_chain for lib in libs for t in lib.tasks]
    multi = sum(1 for c in chains if len(set(c)) >= 2)
    later = 0
    per_round: Counter[int] = Counter()
    for lib in libs:
        report = lib_root / lib.mcp / "validation.json"
        if report.exists():
            for cand in json.loads(report.read_text()).get("candidates", []):
                per_round[int(cand.get("round", 0))] += 1
                later += int(cand.get("round", 0)) > 0
    return {
        "atomic_tasks": len(chains),
        "multi_tool_chains": multi,
        "multi_tool_pct": _pct(multi, len(chains)),
        "candidates_per_round": dict(sorted(per_round.items())),
        "candidates_after_round_1": later,
    }


_VALUE = re.compile(r"[A-Z]{2,}-\d+|\S+@\S+|\d+(\.\d+)?|'[^']*'|\"[^\"]*\"")


def objective_stats(graphs: list[TaskGraph]) -> dict[str, Any]:
    masked = {_VALUE.sub("<v>", g.objective) for g in graphs}
    exact = {g.objective for g in graphs}
    return {"distinct_objectives": len(exact), "distinct_templates": len(masked)}


def _natural(row: dict[str, Any], key: str) -> str:
    for hint in ("email", "name", "title", "subject", "sku", "code"):
        for k, v in row.items():
            if hint in k and k != key and isinstance(v, str):
                return v
    return ""


def _details(row: dict[str, Any], key: str, fks: list[str]) -> str:
    """A nameless row's own values (neither its key nor its parents), as one text."""
    return " | ".join(f"{k}={row[k]}" for k in sorted(row) if k != key and k not in fks)


def _listed_paths(value: Any) -> set[str]:
    """Every file a listing tool's JSON return names: items with a `path` (and a file `type`,
    when typed), or the strings of a plain list."""
    out: set[str] = set()
    if isinstance(value, list):
        for v in value:
            out |= {v.strip()} if isinstance(v, str) else _listed_paths(v)
    elif isinstance(value, dict):
        path = value.get("path")
        if isinstance(path, str) and "items" not in value and value.get("type", "file") == "file":
            out.add(path.strip())
        for v in value.values():
            if isinstance(v, dict | list):
                out |= _listed_paths(v)
    return {p.removeprefix("./").lstrip("/") for p in out if p.strip("./")}


def _seed_files(bundle: BundleView) -> set[str]:
    root = Path(bundle.path) / "seed_workspace"
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _is_file_mcp(bundle: BundleView) -> bool:
    return any(c.operation.startswith("file_") for c in bundle.contracts.contracts)


async def restored_workspaces(
    graphs: list[TaskGraph], bundles: dict[str, BundleView], snap_dir: Path
) -> dict[tuple[str, str], set[str]]:
    """(task id, file MCP) -> the files an agent sees in the task's initial state: the corpus'
    snapshot copies are put into a fresh MegaMCP host with an empty store, a group is created
    from the task's refs alone, and the MCP's own listing tool lists the workspace root. What a
    ref merely declares counts for nothing."""
    from weft_tasks.atomic.megamcp import Registrar, megamcp_client
    from weft_tasks.grounding.reachability import restore_snapshots

    out: dict[tuple[str, str], set[str]] = {}
    wanted = [
        (g, mcp, ref)
        for g in graphs
        for mcp, ref in g.initial_snapshots.items()
        if mcp in bundles and _is_file_mcp(bundles[mcp])
    ]
    if not wanted:
        return out
    with tempfile.TemporaryDirectory(prefix="weft-corpus-stats-") as tmp:
        async with megamcp_client(data_dir=Path(tmp)) as client:
            reg = Registrar(client)
            ids = {m: await reg.mcp_id(Path(b.path)) for m, b in bundles.items()}
            await restore_snapshots(client, graphs, [snap_dir])
            for g, mcp, ref in wanted:
                lister = next(
                    c for c in bundles[mcp].contracts.contracts if c.operation == "file_list"
                )
                arg = next((m.argument for m in lister.mappings if m.role == "path"), None)
                group = await client.create_group(
                    {ids[mcp]: ref.uri},
                    workspaces={ids[mcp]: ref.workspace_uri} if ref.workspace_uri else None,
                )
                try:
                    res = await client.call_tool(
                        group, ids[mcp], lister.tool, {arg: "/"} if arg else {}
                    )
                    try:
                        listed = json.loads(res.text) if not res.is_error else []
                    except ValueError:
                        listed = res.text.splitlines()
                    out[(g.id, mcp)] = _listed_paths(listed)
                finally:
                    await client.close(group)
    return out


def grounding_stats(
    graphs: list[TaskGraph],
    bundles: dict[str, BundleView],
    snap_dir: Path,
    workspaces: dict[tuple[str, str], set[str]] | None = None,
) -> dict[str, Any]:
    """`workspaces`: what `restored_workspaces` saw in each file MCP's initial state."""
    snaps = new = dup = workspace = file_tasks = file_with_ws = 0
    seen = workspaces or {}
    for g in graphs:
        targets = {
            i.value
            for n in g.nodes
            for i in n.inputs
            if isinstance(i.value, str) and len(i.value) >= 3
        } | {v for b in g.bindings for v in b.value.values() if isinstance(v, str)}
        has_files = False
        for mcp, ref in g.initial_snapshots.items():
            b = bundles.get(mcp)
            if b is None:
                continue
            snaps += 1
            workspace += ref.workspace_uri is not None
            if _is_file_mcp(b):
                # new entities: files the initial state holds beyond the bundle's seed;
                # distractors: a new file named almost like a file a node writes
                has_files = True
                extra = seen.get((g.id, mcp), set()) - _seed_files(b)
                file_with_ws += bool(extra)
                new += bool(extra)
                names = {
                    PurePosixPath(str(i.value)).name
                    for n in g.nodes
                    if n.task.mcp == mcp
                    for i in n.inputs
                    if isinstance(i.value, str) and "/" in i.value
                }
                dup += any(
                    PurePosixPath(p).name not in names
                    and any(
                        difflib.SequenceMatcher(None, PurePosixPath(p).name, t).ratio() >= 0.8
                        for t in names
                    )
                    for p in extra
                )
                continue
            db = snap_dir / f"{ref.sha256}.sqlite"
            if not db.exists():
                continue
            has_new = has_dup = False
            for e in b.entities.entities:
                rows = _table_rows(db, e.name)
                seed = {r.get(e.key) for r in b.rows(e.name)}
                has_new |= any(r.get(e.key) not in seed for r in rows)
                tgt = [
                    r for r in rows if any(v in targets for v in r.values() if isinstance(v, str))
                ]
                fks = [f.name for f in e.fields if f.foreign_key]
                for t in tgt:
                    name = _natural(t, e.key)
                    if len(name) < 3:
                        # a record with no name (an account, an order) looks like another of
                        # the same parents whose other values read almost the same
                        has_dup |= any(
                            r.get(e.key) != t.get(e.key)
                            and all(r.get(f) == t.get(f) for f in fks)
                            and difflib.SequenceMatcher(
                                None, _details(t, e.key, fks), _details(r, e.key, fks)
                            ).ratio()
                            >= 0.8
                            for r in rows
                        ) and any(t.get(f) is not None for f in fks)
                        continue
                    for r in rows:
                        other = _natural(r, e.key)
                        if (
                            r.get(e.key) != t.get(e.key)
                            and other
                            and (difflib.SequenceMatcher(None, name, other).ratio() >= 0.8)
                        ):
                            has_dup = True
                            break
            new += has_new
            dup += has_dup
        file_tasks += has_files
    return {
        "snapshots": snaps,
        "with_new_entities_pct": _pct(new, snaps),
        "with_near_duplicate_pct": _pct(dup, snaps),
        "with_workspace": workspace,
        "file_tasks": file_tasks,
        "file_tasks_with_workspace": file_with_ws,
    }


def view_stats(graphs: list[TaskGraph]) -> dict[str, Any]:
    nodes = retrievable = partial_diff = vague_diff = retr_partial_diff = 0
    for g in graphs:
        req = {
            d: dict(
                zip(
                    g.order,
                    build_view(g, ViewMode.SIMUSER, d).requests,
                    strict=False,
                )
            )
            for d in (Disclosure.FULL, Disclosure.PARTIAL, Disclosure.VAGUE)
        }
        for n in g.nodes:
            nodes += 1
            can = any(i.source in ("retrieved", "upstream") for i in n.inputs)
            retrievable += can
            p = req[Disclosure.PARTIAL].get(n.id) != req[Disclosure.FULL].get(n.id)
            partial_diff += p
            retr_partial_diff += p and can
            vague_diff += req[Disclosure.VAGUE].get(n.id) != req[Disclosure.FULL].get(n.id)
    return {
        "nodes": nodes,
        "nodes_with_retrievable_input": retrievable,
        "partial_differs": partial_diff,
        "vague_differs": vague_diff,
        "partial_differs_of_retrievable_pct": _pct(retr_partial_diff, retrievable),
    }


async def measure_async(out: Path) -> dict[str, Any]:
    libs = load_library(out / "lib")
    bundles = {lib.mcp: lib.bundle for lib in libs}
    graphs = [TaskGraph.load(p) for p in sorted((out / "tasks" / "tasks").glob("*.json"))]
    snap_dir = out / "tasks" / "snapshots"
    seen = await restored_workspaces(graphs, bundles, snap_dir)
    return {
        "tasks": len(graphs),
        "flow": flow_stats(graphs, bundles),
        "length": length_stats(graphs),
        "contradictions": contradiction_stats(graphs, bundles),
        "chains": chain_stats(libs, out / "lib"),
        "objectives": objective_stats(graphs),
        "grounding": grounding_stats(graphs, bundles, snap_dir, seen),
        "views": view_stats(graphs),
    }


def measure(out: Path) -> dict[str, Any]:
    return asyncio.run(measure_async(out))


def show(m: dict[str, Any]) -> None:
    f, c, ch, gr, v = m["flow"], m["contradictions"], m["chains"], m["grounding"], m["views"]
    rows = [
        [
            "node inputs (given / upstream / retrieved)",
            f"{f['node_inputs']} ({f['inputs_given']} / {f['inputs_upstream']} / {f['inputs_retrieved']})",
            "",
        ],
        [
            "cross-MCP upstream inputs (never given / created ids)",
            f"{f['cross_mcp_value_inputs']} ({f['cross_mcp_never_given']} / {f['cross_mcp_created_ids']})",
            "",
        ],
        [
            "multi-MCP tasks with a cross-MCP edge of a value never given",
            f"{f['multi_mcp_with_fresh_edge_pct']}% of {f['multi_mcp_tasks']}",
            ">= 60%",
        ],
        [
            "multi-MCP tasks with a cross-MCP edge of an id created upstream",
            f"{f['multi_mcp_with_created_id_edge_pct']}% of {f['multi_mcp_tasks']}",
            "",
        ],
        [
            "tasks with contradictory transitions",
            f"{c['tasks_contradictory']} ({c['tasks_contradictory_pct']}%) {c['by_kind']}",
            "0",
        ],
        [
            "atomic chains with >= 2 tools",
            f"{ch['multi_tool_chains']}/{ch['atomic_tasks']} ({ch['multi_tool_pct']}%)",
            ">= 40%",
        ],
        [
            "Algorithm 1 candidates per round",
            str(ch["candidates_per_round"]),
            "rounds > 1 generate",
        ],
        [
            "distinct objectives / templates",
            f"{m['objectives']['distinct_objectives']} / {m['objectives']['distinct_templates']}",
            "",
        ],
        [
            "snapshots with new entities",
            f"{gr['with_new_entities_pct']}% of {gr['snapshots']}",
            "100%",
        ],
        ["snapshots with a near-duplicate distractor", f"{gr['with_near_duplicate_pct']}%", "100%"],
        [
            "file tasks whose restored workspace holds grounded files",
            f"{gr['file_tasks_with_workspace']}/{gr['file_tasks']}",
            "all",
        ],
        [
            "nodes where partial != full (of retrievable)",
            f"{v['partial_differs_of_retrievable_pct']}% of {v['nodes_with_retrievable_input']}",
            ">= 50%",
        ],
        [
            "nodes where partial / vague != full (all nodes)",
            f"{v['partial_differs']} / {v['vague_differs']} of {v['nodes']}",
            "",
        ],
    ]
    summary_table(f"Corpus contents ({m['tasks']} tasks)", ["figure", "value", "goal"], rows)
    summary_table(
        "Atomic-task turns per profile",
        ["profile", "tasks", "median", "max"],
        [[p, r["tasks"], r["median"], r["max"]] for p, r in m["length"].items()],
    )
    for e in c["examples"]:
        print(f"contradiction: {e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="a compose_1000.py --out folder")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    args = ap.parse_args()
    m = measure(args.out)
    show(m)
    if args.json:
        args.json.write_text(json.dumps(m, indent=2, default=str))
        print(f"written: {args.json}")


if __name__ == "__main__":
    main()
