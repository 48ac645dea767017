"""Defect-injection benchmark for weft-evolve (paper §3.2): is attribution right, are repairs real?

On the example corpus (the nine example MCPs synthesized by weft-envsynth, atomic-task libraries,
composed and grounded task graphs), inject known defects of each kind:

  environment  route_raises | wrong_field | ignores_argument | stale_data   (edits to server.py)
  task         input_missing | precondition_violated | wrong_binding      (graph / snapshot edits)
  verifier     wrong_value | missing_check                                 (check edits)
  off path     off_path_raises: a route no reference calls raises (environment); only a
               policy's stray call shows it (rollout ledgers, MegaMCP stats), never a replay

then run evolution rounds whose rollouts use a stochastic policy that makes genuine mistakes (the
reference policy with calls perturbed at `--rate`) in ReAct across agentic and SimUser views. The
attribution never sees the injected truth; this script compares its decisions with it afterwards:
confusion matrix, precision / recall per kind, policy failures attributed to policy, defects
repaired per round (an oracle that compares each injected component with its clean original),
false revisions (valid components changed) and the tool-error rate per round.

    uv run python benchmarks/evolve/inject.py [--corpus DIR] [--out DIR] [--rounds 3] [--json FILE]

`--corpus` is built on first use (envsynth + weft-tasks, a few minutes) and reused afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
KINDS = {
    "route_raises": "environment",
    "off_path_raises": "environment",
    "wrong_field": "environment",
    "ignores_argument": "environment",
    "stale_data": "environment",
    "input_missing": "task",
    "precondition_violated": "task",
    "wrong_binding": "task",
    "wrong_value": "verifier",
    "missing_check": "verifier",
}
CLASSES = ["policy", "environment", "task", "verifier", "infrastructure"]


@dataclass
class Defect:
    kind: str
    task_id: str = ""
    node_id: str = ""
    mcp: str = ""
    tool: str = ""
    touched: list[tuple[str, str]] = field(default_factory=list)  # (task, node) it breaks
    clean: dict[str, Any] = field(default_factory=dict)  # what the oracle compares with
    repaired_round: int | None = None

    @property
    def component(self) -> str:
        return KINDS[self.kind]

    def label(self) -> str:
        where = (
            f"{self.mcp}.{self.tool}"
            if self.component == "environment"
            else f"{self.task_id}/{self.node_id}"
        )
        return f"{self.kind} @ {where}"


# ----------------------------------------------------------------------------- corpus


def ensure_corpus(corpus: Path, n_tasks: int) -> Path:
    if (corpus / "tasks" / "tasks").is_dir() and any((corpus / "tasks" / "tasks").glob("*.json")):
        return corpus
    corpus.mkdir(parents=True, exist_ok=True)
    specs = sorted(str(p) for p in (ROOT / "examples" / "mcps").glob("*.json"))
    steps = [
        ["weft-envsynth", "synth", *specs, "-o", str(corpus / "envs"), "--quiet"],
        ["weft-tasks", "atomic", str(corpus / "envs"), "-o", str(corpus / "lib"), "--quiet"],
        [
            "weft-tasks",
            "compose",
            str(corpus / "lib"),
            "--n",
            str(n_tasks),
            "-o",
            str(corpus / "tasks"),
            "--quiet",
        ],
    ]
    for cmd in steps:
        print("corpus:", " ".join(cmd[:2]), flush=True)
        subprocess.run(cmd, check=True)
    return corpus


# ----------------------------------------------------------------------------- injection


def _route_span(source: str, tool: str) -> tuple[int, int]:
    import ast

    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == f"tool_{tool}":
            assert node.end_lineno is not None
            return node.body[0].lineno - 1, node.end_lineno
    raise KeyError(tool)


def _route(source: str, tool: str) -> str:
    a, b = _route_span(source, tool)
    return "\n".join(source.splitlines()[a:b])


def _replace_route_body(source: str, tool: str, new_body: str) -> str:
    lines = source.splitlines()
    a, b = _route_span(source, tool)
    lines[a:b] = new_body.splitlines()
    return "\n".join(lines) + "\n"


def _mutate_env(
    kind: str, source: str, tool: str, node: Any, entities: Any, rng: random.Random
) -> str | None:
    body = _route(source, tool)
    indent = re.match(r"\s*", body).group(0)  # type: ignore[union-attr]
    if kind == "route_raises":
        return _replace_route_body(
            source, tool, f'{indent}raise RuntimeError("cache backend unavailable")\n{body}'
        )
    assigns = re.findall(r"^([ \t]*)row\.(\w+) = body\.(\w+)$", body, flags=re.M)
    given = {i.name for i in node.inputs if i.value is not None}
    checked = {c.field for c in node.checks if c.kind == "field_equals"}
    usable = [(ind, f, a) for ind, f, a in assigns if a in given and f in checked]
    if kind in ("wrong_field", "ignores_argument") and usable:
        ind, f, a = rng.choice(usable)
        line = f"{ind}row.{f} = body.{a}"
        if kind == "ignores_argument":
            return _replace_route_body(
                source, tool, body.replace(line, f"{ind}pass  # {a} dropped", 1)
            )
        entity = next((e for e in entities.entities if any(x.name == f for x in e.fields)), None)
        assigned = {x for _i, x, _a in assigns}
        ftype = (
            next((x.type for x in entity.fields if x.name == f), "string") if entity else "string"
        )
        other = [
            x.name
            for x in (entity.fields if entity else [])
            if x.name not in assigned
            and not x.primary_key
            and not x.foreign_key
            and x.type == ftype
            and not x.enum
            and not x.unique
        ]
        if not other:
            return None
        return _replace_route_body(
            source, tool, body.replace(line, f"{ind}row.{rng.choice(sorted(other))} = body.{a}", 1)
        )
    if kind == "stale_data":
        m = re.search(r'^([ \t]*)return \{"(\w+)": row_dict\(row\)\}$', body, flags=re.M)
        rc = next((c for c in node.checks if c.kind == "return_contains"), None)
        if m is None or rc is None or not isinstance(rc.value, str):
            return None
        field_name = None
        for row in node.task.seed_rows.get(m.group(2), []):
            for k, v in row.items():
                if v == rc.value:
                    field_name = k
        if field_name is None:
            return None
        stale = (
            f"{rc.value}-OLD"
            if not re.search(r"\d+$", rc.value)
            else re.sub(r"(\d+)$", lambda x: f"{int(x.group(1)) + 7:0{len(x.group(1))}d}", rc.value)
        )
        new_line = f'{m.group(1)}return {{"{m.group(2)}": {{**row_dict(row), "{field_name}": {stale!r}}}}}  # served from cache'
        return _replace_route_body(source, tool, body.replace(m.group(0), new_line, 1))
    return None


def _seal_bundle(bundle: Path) -> None:
    """Keep the bundle's manifest consistent with its edited files (a defect construction missed)."""
    from weft_core.models import EnvBundleManifest
    from weft_envsynth._internal.assemble import file_hashes

    m = EnvBundleManifest.load(bundle / "manifest.json")
    files = {k: v for k, v in file_hashes(bundle).items() if k != "manifest.json"}
    m = m.model_copy(update={"files": files, "content_hash": None})
    m.sealed().save(bundle / "manifest.json")


def _key_input(node: Any) -> tuple[str, str, str, Any] | None:
    """(input, entity, field, value) of a given input that names an existing entity key."""
    for inp in node.inputs:
        m = re.search(r"\b([a-z_]+)\.([a-z_]+_id)\b", inp.description)
        if (
            inp.source == "given"
            and inp.value is not None
            and m
            and m.group(1) in node.task.seed_rows
        ) and any(r.get(m.group(2)) == inp.value for r in node.task.seed_rows[m.group(1)]):
            return inp.name, m.group(1), m.group(2), inp.value
    return None


def _set_input(node: Any, name: str, value: Any) -> Any:
    inputs = [i.model_copy(update={"value": value}) if i.name == name else i for i in node.inputs]
    tinputs = [
        i.model_copy(update={"value": value}) if i.name == name else i for i in node.task.inputs
    ]
    return node.model_copy(
        update={"inputs": inputs, "task": node.task.model_copy(update={"inputs": tinputs})}
    )


def _regraph(graph: Any, **changes: Any) -> Any:
    from weft_core.models import TaskGraph

    data = graph.model_dump(mode="json")
    for k, v in changes.items():
        data[k] = (
            [x.model_dump(mode="json") for x in v]
            if isinstance(v, list)
            else (
                {m: s.model_dump(mode="json") for m, s in v.items()} if isinstance(v, dict) else v
            )
        )
    data["content_hash"] = None
    return TaskGraph.model_validate(data).sealed()


async def inject(
    graphs: dict[str, Any],
    bundles: dict[str, Path],
    client: Any,
    per_kind: int,
    rng: random.Random,
    per_kind_off_path: int | None = None,
) -> tuple[dict[str, Any], list[Defect]]:
    from weft_core.models import ContractSet, EntityModel, SnapshotRef
    from weft_evolve.revision.task import snapshot_file

    if per_kind_off_path is None:
        per_kind_off_path = per_kind

    defects: list[Defect] = []
    used_nodes: set[tuple[str, str]] = set()
    used_tasks_for_graph_edits: set[str] = set()
    tool_nodes: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for g in graphs.values():
        for n in g.nodes:
            for t in n.task.tool_chain:
                tool_nodes.setdefault((n.task.mcp, t), []).append((g.id, n.id))
    all_nodes = [(g.id, n) for g in graphs.values() for n in g.nodes]

    # Environment defects: one tool each, every node that calls it is touched.
    # The most constrained kinds pick first (stale data needs a checked read of one row).
    for kind in ("stale_data", "wrong_field", "ignores_argument", "route_raises"):
        made = 0
        candidates = sorted(tool_nodes.items(), key=lambda kv: (len(kv[1]), kv[0]))
        rng.shuffle(candidates)
        for (mcp, tool), nodes in candidates:
            if made >= per_kind:
                break
            if any(n in used_nodes for n in nodes) or any(
                d.mcp == mcp and d.component == "environment" for d in defects
            ):
                continue
            tid, nid = nodes[0]
            node = graphs[tid].node(nid)
            if node.task.tool_chain[0] != tool:
                continue
            bundle = bundles[mcp]
            src = (bundle / "server.py").read_text(encoding="utf-8")
            new = _mutate_env(
                kind, src, tool, node, EntityModel.load(bundle / "entities.json"), rng
            )
            if new is None or new == src:
                continue
            # Every node calling the tool must be one the mutation breaks for the truth to hold.
            (bundle / "server.py").write_text(new, encoding="utf-8")
            _seal_bundle(bundle)
            from weft_evolve.revision.environment import route_sources

            defects.append(
                Defect(
                    kind=kind,
                    mcp=mcp,
                    tool=tool,
                    touched=list(nodes),
                    clean={"route": route_sources(src)[tool]},
                )
            )
            used_nodes.update(nodes)
            made += 1
    # Off the reference path: a tool of a busy MCP that no node's reference calls, so only the
    # policy's own stray calls (another tool of the MCP) can reach it. Busy MCPs first: they are
    # where a stochastic policy strays most; which calls stray is left to the policy.
    calls_per_mcp = Counter(m for (m, _t), nodes in tool_nodes.items() for _ in nodes)
    made = 0
    for mcp, _n in sorted(calls_per_mcp.items(), key=lambda kv: (-kv[1], kv[0])):
        if made >= per_kind_off_path:
            break
        bundle = bundles[mcp]
        contracts = ContractSet.load(bundle / "contracts.json")
        off = sorted(c.tool for c in contracts.contracts if (mcp, c.tool) not in tool_nodes)
        if not off:
            continue
        tool = rng.choice(off)
        src = (bundle / "server.py").read_text(encoding="utf-8")
        new = _mutate_env("route_raises", src, tool, None, None, rng)
        assert new is not None
        (bundle / "server.py").write_text(new, encoding="utf-8")
        _seal_bundle(bundle)
        from weft_evolve.revision.environment import route_sources

        defects.append(
            Defect(
                kind="off_path_raises",
                mcp=mcp,
                tool=tool,
                touched=[],  # no reference calls it: a failed checkpoint is never its doing
                clean={"route": route_sources(src)[tool]},
            )
        )
        made += 1
    for mcp in {d.mcp for d in defects}:
        await client.register(bundles[mcp])

    def free_nodes(pred: Any) -> list[tuple[str, Any]]:
        out = [(tid, n) for tid, n in all_nodes if (tid, n.id) not in used_nodes and pred(tid, n)]
        rng.shuffle(out)
        return out

    # Task defects.
    for kind in ("input_missing", "precondition_violated", "wrong_binding"):
        made = 0
        for tid, node in free_nodes(
            lambda t, n: t not in used_tasks_for_graph_edits and _key_input(n) is not None
        ):
            if made >= per_kind:
                break
            g = graphs[tid]
            name, entity, fld, value = _key_input(node)  # type: ignore[misc]
            touched = [
                (tid, n.id)
                for n in g.nodes
                if n.task.mcp == node.task.mcp and any(i.value == value for i in n.inputs)
            ]
            if any(t in used_nodes for t in touched):
                continue
            if kind == "input_missing":
                g = _regraph(
                    g, nodes=[_set_input(n, name, None) if n.id == node.id else n for n in g.nodes]
                )
                touched = [(tid, node.id)]
                clean = {"input": name, "value": value}
            elif kind == "wrong_binding":
                m = re.match(r"^(.*?)(\d+)$", str(value))
                if not m:
                    continue
                wrong = f"{m.group(1)}{int(m.group(2)) + 900:0{len(m.group(2))}d}"
                g = _regraph(
                    g, nodes=[_set_input(n, name, wrong) if n.id == node.id else n for n in g.nodes]
                )
                touched = [(tid, node.id)]
                clean = {"input": name, "value": value}
            else:
                ref = g.initial_snapshots.get(node.task.mcp)
                if ref is None:
                    continue
                work = Path(client_tmp) / f"{tid}-{node.id}.sqlite"
                shutil.copyfile(snapshot_file(ref.uri, snapshot_roots), work)
                conn = sqlite3.connect(work)
                cur = conn.execute(f'DELETE FROM "{entity}" WHERE "{fld}" = ?', (value,))
                conn.commit()
                conn.close()
                if cur.rowcount != 1:
                    continue
                uri = await client.put_snapshot(node.task.mcp, work)
                import hashlib

                snaps = dict(g.initial_snapshots)
                snaps[node.task.mcp] = SnapshotRef(
                    mcp=node.task.mcp, uri=uri, sha256=hashlib.sha256(work.read_bytes()).hexdigest()
                )
                g = _regraph(g, initial_snapshots=snaps)
                clean = {"table": entity, "field": fld, "value": value}
            graphs[tid] = g
            defects.append(
                Defect(
                    kind=kind,
                    task_id=tid,
                    node_id=node.id,
                    mcp=node.task.mcp,
                    touched=touched,
                    clean=clean,
                )
            )
            used_nodes.update(touched)
            used_tasks_for_graph_edits.add(tid)
            made += 1

    # Verifier defects.
    for kind in ("wrong_value", "missing_check"):
        made = 0

        def eligible(t: str, n: Any, kind: str = kind) -> bool:
            if kind == "wrong_value":
                return any(
                    c.kind in ("field_equals", "return_contains") and isinstance(c.value, str)
                    for c in n.checks
                )
            return sum(1 for c in n.checks if c.kind == "field_equals") >= 2 or (
                len(n.checks) == 1 and n.checks[0].kind == "return_contains"
            )

        for tid, node in free_nodes(eligible):
            if made >= per_kind:
                break
            g = graphs[tid]
            if kind == "wrong_value":
                target = next(
                    c
                    for c in node.checks
                    if c.kind in ("field_equals", "return_contains") and isinstance(c.value, str)
                )
                bad = target.model_copy(update={"value": f"{target.value}-X"})
                checks = [bad if c.id == target.id else c for c in node.checks]
                final = [bad if c.id == target.id else c for c in g.final_checks]
                clean = {"check": target.id, "wrong": bad.value}
            else:
                fe = [c for c in node.checks if c.kind == "field_equals"]
                target = fe[-1] if fe else node.checks[0]
                checks = [c for c in node.checks if c.id != target.id]
                final = [c for c in g.final_checks if c.id != target.id]
                clean = {"check": target.model_dump(mode="json")}
            nodes = [
                n.model_copy(update={"checks": checks}) if n.id == node.id else n for n in g.nodes
            ]
            graphs[tid] = _regraph(g, nodes=nodes, final_checks=final)
            defects.append(
                Defect(
                    kind=kind,
                    task_id=tid,
                    node_id=node.id,
                    mcp=node.task.mcp,
                    touched=[(tid, node.id)],
                    clean=clean,
                )
            )
            used_nodes.add((tid, node.id))
            made += 1  # noqa: SIM113
    return graphs, defects


client_tmp = ""
snapshot_roots: list[Path] = []  # MegaMCP's data dir and the corpus: where snapshot bytes lie

# ----------------------------------------------------------------------------- oracle and scoring


def repaired(d: Defect, graphs: dict[str, Any], bundles: dict[str, Path]) -> bool:
    from weft_evolve.revision.environment import route_sources
    from weft_evolve.revision.task import snapshot_file

    if d.component == "environment":
        now = route_sources((bundles[d.mcp] / "server.py").read_text(encoding="utf-8")).get(d.tool)
        return now == d.clean["route"]
    g = graphs.get(d.task_id)
    if g is None:
        return True
    node = next((n for n in g.nodes if n.id == d.node_id), None)
    if node is None:
        return True  # the node was dropped: the defect is gone with it
    if d.kind in ("input_missing", "wrong_binding"):
        inp = next((i for i in node.inputs if i.name == d.clean["input"]), None)
        return inp is not None and inp.value == d.clean["value"]
    if d.kind == "precondition_violated":
        import fsspec

        ref = g.initial_snapshots[d.mcp]
        tmp = Path(client_tmp) / "oracle.sqlite"
        with fsspec.open(str(snapshot_file(ref.uri, snapshot_roots)), "rb") as src:
            tmp.write_bytes(src.read())
        conn = sqlite3.connect(tmp)
        try:
            n = conn.execute(
                f'SELECT COUNT(*) FROM "{d.clean["table"]}" WHERE "{d.clean["field"]}" = ?',
                (d.clean["value"],),
            ).fetchone()[0]
        finally:
            conn.close()
        return bool(n)
    if d.kind == "wrong_value":
        return bool(node.checks) and not any(
            getattr(c, "value", None) == d.clean["wrong"] for c in node.checks
        )
    # missing_check: some check pins what the dropped one pinned.
    gone = d.clean["check"]
    for c in node.checks:
        if gone["kind"] == "return_contains" and c.kind in (
            "return_contains",
            "row_exists",
            "field_equals",
        ):
            return True
        if (
            gone["kind"] == "return_contains"
            and c.kind == "workspace_file"
            and c.exists
            and str(c.path).rstrip("/").endswith(str(gone["value"]))
        ):
            return True  # the listed file pinned in the workspace itself (a state check)
        if (
            gone["kind"] == "field_equals"
            and c.kind == "field_equals"
            and c.table == gone["table"]
            and c.field == gone["field"]
        ):
            return True
    return False


def truth_of(att: Any, active: list[Defect]) -> str:
    """The injected truth for one decision (never shown to the attribution)."""
    if att.unit_id.startswith("ops:"):
        hit = [
            d
            for d in active
            if d.component == "environment"
            and d.mcp == att.target.mcp
            and d.tool == att.target.tool
        ]
        return "environment" if hit else "none"
    key = (att.task_id, att.node_id)
    hit = [d for d in active if key in d.touched]
    if att.unit_id.startswith("audit:"):
        return hit[0].component if hit else "none"
    if not hit:
        return "policy"
    d = hit[0]
    if d.kind == "missing_check":
        # A lax verifier is only at fault where the checks passed a turn they should have failed.
        return "verifier" if att.unit_kind == "rubric_disagreement" else "policy"
    return d.component


def false_revisions(records: list[Any], defects: list[Defect]) -> list[str]:
    bad: list[str] = []
    env = {(d.mcp, d.tool) for d in defects if d.component == "environment"}
    nodes = {(d.component, t) for d in defects for t in d.touched}
    for r in records:
        for v in r.revisions:
            if not v.revalidated:
                continue
            parts = v.target_key.split(":")
            if v.component.value == "environment":
                # Only routes that actually changed count (a regenerated route may equal its own).
                tools = [c.removeprefix("route ") for c in v.changed if c.startswith("route ")]
                bad += [
                    f"round {r.round}: env {parts[1]}.{t}"
                    for t in tools
                    if (parts[1], t) not in env
                ]
            else:
                if (v.component.value, (parts[1], parts[2])) not in nodes:
                    bad.append(f"round {r.round}: {v.target_key}")
    return bad


def score(records: list[Any], defects: list[Defect]) -> dict[str, Any]:
    confusion: dict[str, Counter[str]] = {}
    for r in records:
        active = [d for d in defects if d.repaired_round is None or d.repaired_round >= r.round]
        for a in r.attributions:
            truth = truth_of(a, active)
            confusion.setdefault(truth, Counter())[a.component.value] += 1
    per_kind: dict[str, dict[str, float | None]] = {}
    for c in ["policy", "environment", "task", "verifier"]:
        tp = confusion.get(c, Counter())[c]
        predicted = sum(row[c] for row in confusion.values())
        actual = sum(confusion.get(c, Counter()).values())
        per_kind[c] = {
            "precision": tp / predicted if predicted else None,
            "recall": tp / actual if actual else None,
            "decisions": predicted,
            "truth": actual,
        }
    return {"confusion": {t: dict(row) for t, row in confusion.items()}, "per_kind": per_kind}


# ----------------------------------------------------------------------------- harnesses, origins


async def external_harnesses(
    stack: contextlib.AsyncExitStack,
    names: list[str],
    world: Any,
    graphs: dict[str, Any],
    args: argparse.Namespace,
    salt: Any,
) -> None:
    """Hermes / OpenClaw in their native loops, their model an OpenAI-compatible endpoint behind
    the capture gateway: `--policy-endpoint` (e.g. the tiny policy of `weft-train serve`), or by
    default the same noisy reference policy served over HTTP, told apart per task by its brief."""
    from weft_core.models import ViewMode
    from weft_evolve.rounds import load_tasks
    from weft_evolve.testing import NoisyReferencePolicy
    from weft_tasks.gateway import CaptureGateway
    from weft_tasks.harness import ReferencePolicyModel
    from weft_tasks.harness.external import HarnessSettings, HermesHarness, OpenClawHarness
    from weft_tasks.testing import ScriptedOpenAIServer, reference_replies_by_brief

    def current() -> list[Any]:
        tasks = world.out / "tasks"
        return list(load_tasks(tasks).values() if tasks.is_dir() else graphs.values())

    if args.policy_endpoint:
        served, url = args.policy_endpoint.split("@", 1)
    else:
        model_of: dict[str, NoisyReferencePolicy] = {}

        def make_model(g: Any) -> NoisyReferencePolicy:
            # One policy per task and round (the round's salt), like ReAct's.
            key = f"{g.id}:{salt()}"
            if key not in model_of:
                model_of[key] = NoisyReferencePolicy(
                    inner=ReferencePolicyModel(graph=g, mode=ViewMode.AGENTIC),
                    rate=args.rate,
                    seed=f"{g.id}:external:{salt()}",
                )
            return model_of[key]

        def brief_policy(messages: Any, tools: Any) -> Any:
            # A fresh by-brief policy per round, so the round's salt reaches every task.
            key = salt()
            if key not in per_round:
                per_round[key] = reference_replies_by_brief(
                    current, ViewMode.AGENTIC, make_model=make_model
                )
            return per_round[key](messages, tools)

        per_round: dict[str, Any] = {}
        served = f"noisy-reference-p{args.rate:g}"
        server = ScriptedOpenAIServer(brief_policy, model=served)
        url = await stack.enter_async_context(server.running())
    gateway = CaptureGateway(url, capture_dir=world.out / "captures")
    await stack.enter_async_context(gateway.running())
    world.gateway = gateway
    settings = HarnessSettings(timeout_s=args.harness_timeout)
    adapters = {"hermes": HermesHarness, "openclaw": OpenClawHarness}
    for name in names:
        world.harnesses[name] = adapters[name](gateway, served, settings=settings)


def error_origins(evolve_out: Path, n: int) -> dict[str, dict[str, int]]:
    """A round's tool errors split by who made the call: the noisy policy marks a call it
    perturbed (its id ends in `_m`); an error on an intended call is the environment's or the
    task's. Harnesses that do not pass call ids to MegaMCP leave calls unmarked."""
    from weft_core.models import Trace

    out = {
        k: {"calls": 0, "perturbed": 0, "intended": 0, "unmarked": 0} for k in ("all", "selected")
    }
    path = evolve_out / "rounds" / str(n) / "traces.jsonl"
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        t = Trace.model_validate_json(line)
        if t.failed_on_infrastructure:
            continue
        keys = ["all"] + (["selected"] if t.final is not None and t.final.passed else [])
        for e in t.ledger:
            for k in keys:
                out[k]["calls"] += 1
                if not e.is_error or (e.error_kind is not None and e.error_kind.is_infrastructure):
                    continue
                cid = e.call_id
                origin = (
                    "unmarked" if not cid else ("perturbed" if cid.endswith("_m") else "intended")
                )
                out[k][origin] += 1
    return out


# ----------------------------------------------------------------------------- main


async def main(args: argparse.Namespace) -> dict[str, Any]:
    global client_tmp
    from weft_core.console import set_quiet, summary_table
    from weft_core.llm import make_chat_model
    from weft_core.models import TaskGraph
    from weft_evolve import EvolveSettings, EvolveWorld, evolve, print_report, write_report
    from weft_evolve.testing import noisy_policy
    from weft_tasks.atomic.megamcp import megamcp_client
    from weft_tasks.harness import ReActHarness

    t0 = time.perf_counter()
    corpus = ensure_corpus(Path(args.corpus), args.n_tasks)
    out = Path(args.out)
    if out.exists() and not args.resume:
        shutil.rmtree(out)
    work = out / "work"
    fresh = not (work / "defects.json").exists()
    if fresh:
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(
            corpus / "envs", work / "envs", ignore=shutil.ignore_patterns(".history", ".work-*")
        )
        shutil.copytree(
            corpus / "tasks" / ".megamcp",
            work / "megamcp",
            ignore=shutil.ignore_patterns("sessions", "checkpoints"),
        )
    client_tmp = str(work / "tmp")
    snapshot_roots[:] = [work / "megamcp", corpus / "tasks"]
    Path(client_tmp).mkdir(parents=True, exist_ok=True)
    bundles = {p.parent.name: p.parent for p in sorted((work / "envs").glob("*/manifest.json"))}
    graphs = {
        g.id: g
        for g in (TaskGraph.load(p) for p in sorted((corpus / "tasks" / "tasks").glob("*.json")))
    }
    if args.max_tasks:
        graphs = dict(list(graphs.items())[: args.max_tasks])
    set_quiet(args.quiet)
    llm = None
    if args.model:
        from weft_core.llm import parse_model_spec

        cfg = parse_model_spec(args.model, setting="--model")
        if cfg is not None:
            # A bounded answer: the strategies parse JSON or code, never essays.
            cfg = cfg.model_copy(update={"max_tokens": args.model_max_tokens, "timeout": 300.0})
            llm = make_chat_model(cfg)
    async with megamcp_client(url=None, data_dir=work / "megamcp") as client:
        for b in bundles.values():
            await client.register(b)
        if fresh:
            graphs, defects = await inject(
                graphs,
                bundles,
                client,
                args.per_kind,
                random.Random(args.seed),
                per_kind_off_path=args.off_path,
            )
            (work / "defects.json").write_text(
                json.dumps([d.__dict__ for d in defects], indent=1, default=str)
            )
            (work / "tasks").mkdir(exist_ok=True)
            for g in graphs.values():
                g.save(work / "tasks" / f"{g.id}.json")
        else:
            defects = [
                Defect(**{**d, "touched": [tuple(x) for x in d["touched"]]})
                for d in json.loads((work / "defects.json").read_text())
            ]
            graphs = {
                g.id: g
                for g in (TaskGraph.load(p) for p in sorted((work / "tasks").glob("*.json")))
            }
        print(
            f"injected {len(defects)} defects: "
            + ", ".join(f"{k}={v}" for k, v in Counter(d.kind for d in defects).items()),
            flush=True,
        )
        views = [tuple(v.split("/")) for v in args.views]
        policy = make_chat_model(args.policy_model) if args.policy_model else None
        # --resample: the policy samples anew each round (a teacher's fresh rollouts); otherwise
        # every round repeats the same mistakes.
        current_round = [1]

        def salt() -> str:
            return f"round{current_round[0]}" if args.resample else ""

        harnesses: dict[str, Any] = {
            "react": ReActHarness(policy if policy is not None else noisy_policy(args.rate, salt))
        }
        external = [h for h in args.harnesses if h != "react"]
        repaired_per_round: list[int] = []

        def on_round(record: Any) -> None:
            from weft_evolve.rounds import load_tasks

            current = load_tasks(world.out / "tasks") if (world.out / "tasks").is_dir() else graphs
            for d in defects:
                if d.repaired_round is None and repaired(d, current, bundles):
                    d.repaired_round = record.round

        world = EvolveWorld(
            client=client,
            bundles=bundles,
            harnesses=harnesses if "react" in args.harnesses else {},
            views=views,  # type: ignore[arg-type]
            out=out / "evolve",
            settings=EvolveSettings(rounds=args.rounds, concurrency=args.concurrency),
            llm=llm,
            snapshot_roots=list(snapshot_roots),
        )
        # The oracle runs after each round is saved (the tasks folder then holds its result).
        records: list[Any] = []

        async def run() -> list[Any]:
            recs = []
            for n in range(1, args.rounds + 1):
                current_round[0] = n
                recs = await evolve(graphs, world, n)
                on_round(recs[-1])
                repaired_per_round.append(sum(1 for d in defects if d.repaired_round is not None))
            return recs

        async with contextlib.AsyncExitStack() as stack:
            if external:
                await external_harnesses(stack, external, world, graphs, args, salt)
            records = await run()
    scores = score(records, defects)
    fr = false_revisions(records, defects)
    figures = {
        "defects": [
            {"defect": d.label(), "component": d.component, "repaired_round": d.repaired_round}
            for d in defects
        ],
        "repaired_per_round": repaired_per_round,
        "repaired_within_3": sum(
            1 for d in defects if d.repaired_round is not None and d.repaired_round <= 3
        ),
        "defects_total": len(defects),
        "false_revisions": fr,
        "tool_error_rate": [round(r.stats.tool_error_rate, 4) for r in records],
        "tool_error_rate_selected": [round(r.stats.selected_tool_error_rate, 4) for r in records],
        "tool_errors_by_origin": [error_origins(out / "evolve", r.round) for r in records],
        "revisions_failed_revalidation": [r.stats.failed_revalidations for r in records],
        **scores,
        "config": {k: v for k, v in vars(args).items()},
        "seconds": round(time.perf_counter() - t0, 1),
    }
    set_quiet(False)
    print_report(records)
    truths = ["policy", "environment", "task", "verifier", "none"]
    summary_table(
        "Attribution confusion (rows: injected truth, columns: decision)",
        ["truth", *CLASSES],
        [
            [t, *[scores["confusion"].get(t, {}).get(c, 0) for c in CLASSES]]
            for t in truths
            if t in scores["confusion"]
        ],
    )
    summary_table(
        "Precision / recall per component",
        ["component", "precision", "recall", "decisions", "truth"],
        [
            [
                c,
                "-" if v["precision"] is None else f"{v['precision']:.1%}",
                "-" if v["recall"] is None else f"{v['recall']:.1%}",
                v["decisions"],
                v["truth"],
            ]
            for c, v in scores["per_kind"].items()
        ],
    )
    summary_table(
        "Injected defects",
        ["defect", "component", "repaired in round"],
        [[d.label(), d.component, d.repaired_round or "-"] for d in defects],
    )
    summary_table(
        "Tool errors by origin (the floor): a call the noisy policy perturbed, or an intended one",
        [
            "round",
            "calls",
            "policy mistakes",
            "intended calls",
            "unmarked",
            "selected: calls",
            "mistakes",
            "intended",
        ],
        [
            [
                r.round,
                o["all"]["calls"],
                o["all"]["perturbed"],
                o["all"]["intended"],
                o["all"]["unmarked"],
                o["selected"]["calls"],
                o["selected"]["perturbed"],
                o["selected"]["intended"],
            ]
            for r, o in zip(records, figures["tool_errors_by_origin"], strict=True)
        ],
    )
    print(f"repaired per round (cumulative): {repaired_per_round} of {len(defects)}")
    print(f"false revisions (valid components changed): {len(fr)} {fr[:6]}")
    print(
        f"tool-error rate per round (all rollouts): {figures['tool_error_rate']}; selected: {figures['tool_error_rate_selected']}"
    )
    _, html_path = write_report(
        records,
        out,
        extra={
            k: figures[k]
            for k in ("repaired_per_round", "per_kind", "confusion", "false_revisions")
        },
    )
    figures["html_report"] = str(html_path)
    print(f"HTML report: {html_path}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1, default=str))
    return figures


if __name__ == "__main__":
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--corpus", default=str(ROOT / ".weft" / "evolve-bench" / "corpus"))
    p.add_argument("--out", default=str(ROOT / ".weft" / "evolve-bench" / "run"))
    p.add_argument("--n-tasks", type=int, default=16)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--max-tasks", type=int, default=0, help="Use only the first N tasks (smoke).")
    p.add_argument("--per-kind", type=int, default=2)
    p.add_argument("--rate", type=float, default=0.15, help="Share of policy calls perturbed.")
    p.add_argument(
        "--views", nargs="+", default=["agentic/full", "simuser/partial", "simuser/vague"]
    )
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default="", help="LangChain model spec for the LLM strategies.")
    p.add_argument("--model-max-tokens", type=int, default=512)
    p.add_argument(
        "--policy-model",
        default="",
        help="A model as the rollout policy (default: noisy reference policy).",
    )
    p.add_argument(
        "--off-path",
        type=int,
        default=None,
        help="Defects off the reference path (routes no reference calls); default --per-kind.",
    )
    p.add_argument(
        "--resample",
        action="store_true",
        help="The policy samples anew each round (default: the same mistakes every round).",
    )
    p.add_argument(
        "--harnesses",
        nargs="+",
        default=["react"],
        choices=["react", "hermes", "openclaw"],
        help="Rollout harnesses; hermes/openclaw run agentic views only.",
    )
    p.add_argument(
        "--policy-endpoint",
        default="",
        help="MODEL@URL of an OpenAI-compatible endpoint for hermes/openclaw "
        "(default: the noisy reference policy served on 127.0.0.1).",
    )
    p.add_argument("--harness-timeout", type=float, default=300.0)
    p.add_argument("--resume", action="store_true", help="Keep OUT and continue where it stopped.")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", default="")
    sys.exit(0 if asyncio.run(main(p.parse_args())) else 1)
