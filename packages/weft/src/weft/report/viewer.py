"""The trace viewer's data: a small index of tasks parsed when the page loads, and one
gzip-compressed, base64-encoded JSON blob per task (its graph and all its rollouts) that the
page decompresses only when the task is opened. A 1,000-task corpus thus costs the page one
string array, not 1,000 rendered graphs.

Blob keys are short because a corpus has many thousand messages; `assets/viewer.js` documents
the same shape where it reads it.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections import defaultdict
from typing import Any

from weft.report.data import DiscardedAttempt, RunData, is_reference
from weft_core.models import EvaluationResult, TaskGraph, Trace
from weft_core.state import CheckpointDiff, FileState, TableDiff

MAX_TEXT = 3000  # characters of one message or tool result kept; the rest is counted, not shown
MAX_CELL = 300  # characters of one cell of a diffed row kept in the page


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT} more characters)"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def _outcomes(result: EvaluationResult | None) -> list[list[Any]] | None:
    if result is None:
        return None
    return [[o.check_id, o.kind, o.passed, o.reason] for o in result.outcomes]


def _cell(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_CELL:
        return value[:MAX_CELL] + f"… ({len(value) - MAX_CELL} more characters)"
    return value


def _row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: _cell(v) for k, v in row.items()}


def _table_payload(diff: TableDiff) -> dict[str, Any]:
    return {
        "ins": [[k, _row(r)] for k, r in diff.inserts.items()],
        "upd": [[k, _row(u.old), _row(u.new), sorted(u.changed)] for k, u in diff.updates.items()],
        "del": [[k, _row(r)] for k, r in diff.deletes.items()],
        "n": diff.counts(),
        "om": sum(diff.omitted.values()),
    }


def _file(f: FileState) -> list[Any]:
    return [f.size, _clip(f.text), f.symlink]


def diff_payload(diff: CheckpointDiff | None) -> dict[str, Any] | None:
    """A turn's state diff as the viewer draws it: per MCP, changed tables (inserted, updated
    with their changed columns, deleted rows) and files; MCPs that changed nothing left out."""
    if diff is None:
        return None
    mcps: dict[str, Any] = {}
    for mcp, changes in sorted(diff.mcps.items()):
        if changes.empty:
            continue
        files = changes.files
        mcps[mcp] = {
            "tables": {t: _table_payload(d) for t, d in sorted(changes.db.tables.items())},
            "new": changes.db.tables_added,
            "dropped": changes.db.tables_removed,
            "files": {
                "add": [[p, *_file(f)] for p, f in files.added.items()],
                "mod": [[p, *_file(c.old), *_file(c.new)] for p, c in files.modified.items()],
                "rm": [[p, *_file(f)] for p, f in files.removed.items()],
            },
        }
    return {
        "since": diff.since,
        "trunc": diff.truncated,
        "max": diff.max_rows,
        "err": diff.error,
        "mcps": mcps,
    }


def graph_payload(graph: TaskGraph) -> dict[str, Any]:
    return {
        "id": graph.id,
        "objective": graph.objective,
        "profile": graph.profile,
        "mcps": graph.mcps,
        "order": graph.order,
        "nodes": [
            {
                "id": n.id,
                "mcp": n.task.mcp,
                "task": n.task.id,
                "intent": n.intent,
                "chain": n.task.tool_chain,
                "inputs": [
                    {
                        "name": i.name,
                        "source": i.source,
                        "value": _clip(_json(i.value)) if i.value is not None else None,
                        "from": f"{i.from_node}.{i.from_output}" if i.from_node else None,
                    }
                    for i in n.inputs
                ],
                "checks": [[c.id, c.kind, c.description] for c in n.checks],
            }
            for n in graph.nodes
        ],
        "edges": [[e.source, e.target, e.kind.value, e.fields] for e in graph.edges],
        "bindings": [
            {"name": b.name, "entity": b.entity, "value": b.value, "refs": b.refs}
            for b in graph.bindings
        ],
        "final": [[c.id, c.kind, c.description] for c in graph.final_checks],
    }


def trace_payload(trace: Trace, discarded: list[DiscardedAttempt]) -> dict[str, Any]:
    return {
        "id": trace.id,
        "view": trace.view,
        "harness": trace.harness,
        "model": trace.model,
        "ref": is_reference(trace.model),
        "reward": round(trace.reward, 4),
        "passed": trace.final is not None and trace.final.passed,
        "final": _outcomes(trace.final),
        "error": trace.error,
        "retries": trace.infrastructure_retries,
        "discarded": [d.model_dump() for d in discarded],
        "messages": [
            {
                "r": m.role,
                "c": _clip(m.content),
                "tc": [
                    [tc.id, tc.function.name, _clip(tc.function.arguments)] for tc in m.tool_calls
                ]
                if m.tool_calls
                else None,
                "id": m.tool_call_id,
            }
            for m in trace.messages
        ],
        # Results are in the tool messages already; a mutating call keeps its own, as the
        # state change the turn made.
        "ledger": [
            {
                "mcp": e.mcp,
                "seq": e.seq,
                "tool": e.tool,
                "args": _clip(_json(e.arguments)),
                "err": e.is_error,
                "kind": e.error_kind.value if e.error_kind else None,
                "mut": e.mutated,
                "sv": e.state_version,
                "call": e.call_id,
                "res": _clip(_json(e.result)) if e.mutated else None,
            }
            for e in trace.ledger
        ],
        "segments": [
            {
                "node": s.node_id,
                "start": s.start,
                "end": s.end,
                "attempts": s.attempts,
                "ledger": s.ledger_seqs,
                "outcome": _outcomes(s.outcome),
                "diff": diff_payload(s.state_diff),
            }
            for s in trace.segments
        ],
    }


def encode_blob(payload: dict[str, Any]) -> str:
    raw = _json(payload).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def decode_blob(blob: str) -> dict[str, Any]:
    """The inverse of `encode_blob` (what the page does with DecompressionStream)."""
    data: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(blob)))
    return data


def viewer_data(run: RunData) -> tuple[list[list[Any]], list[str]]:
    """(index rows, blobs): one row and one blob per task, in the same order. A row is
    [task id, profile, turns, "mcp, mcp", rollouts, rollouts whose final verification passed,
    reference rollouts]. Traces of a task whose graph the run lacks still get a row."""
    by_task: dict[str, list[Trace]] = defaultdict(list)
    for t in run.traces:
        by_task[t.task_id].append(t)
    graphs = {g.id: g for g in run.tasks}
    ids = [g.id for g in run.tasks] + sorted(set(by_task) - set(graphs))
    index: list[list[Any]] = []
    blobs: list[str] = []
    for task_id in ids:
        graph = graphs.get(task_id)
        traces = sorted(by_task.get(task_id, []), key=lambda t: (t.view, t.harness, t.id))
        payload: dict[str, Any] = (
            graph_payload(graph)
            if graph
            else {"id": task_id, "missing": "task graph not in this run"}
        )
        payload["rollouts"] = [trace_payload(t, run.discarded.get(t.id, [])) for t in traces]
        index.append(
            [
                task_id,
                graph.profile if graph else "",
                len(graph.nodes) if graph else 0,
                ", ".join(graph.mcps) if graph else "",
                len(traces),
                sum(1 for t in traces if t.final is not None and t.final.passed),
                sum(1 for t in traces if is_reference(t.model)),
            ]
        )
        blobs.append(encode_blob(payload))
    return index, blobs
