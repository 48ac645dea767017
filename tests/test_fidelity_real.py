"""The real-server fidelity benchmark (benchmarks/envsynth/fidelity_real.py): its generic call
generator and scoring without servers, and one short run against a real server when installed."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "envsynth"
sys.path.insert(0, str(BENCH))

import fidelity_real as F  # noqa: E402

ENTITY_TOOLS = [
    {
        "name": "create_entities",
        "description": "Create multiple new entities in the knowledge graph",
        "inputSchema": {
            "type": "object",
            "properties": {
                "entities": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "The name of the entity"},
                            "kind": {"type": "string", "enum": ["person", "place"]},
                            "rank": {"type": "integer", "minimum": 3, "maximum": 4},
                        },
                        "required": ["name", "kind", "rank"],
                    },
                }
            },
            "required": ["entities"],
        },
        "annotations": {"readOnlyHint": False},
    },
    {
        "name": "open_nodes",
        "description": "Open nodes by name",
        "inputSchema": {
            "type": "object",
            "properties": {"names": {"type": "array", "items": {"type": "string"}}},
            "required": ["names"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {"name": "read_graph", "inputSchema": {"type": "object", "properties": {}}},
    {
        "name": "list_directory",
        "description": "List a directory",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
]


def test_values_follow_the_schema_and_names_flow_between_argument_names() -> None:
    gen = F.CallGen(root="/srv/ws", rng=random.Random(1), reuse=1.0)
    created = gen.call(ENTITY_TOOLS[0])
    for e in created["entities"]:
        assert e["kind"] in ("person", "place") and 3 <= e["rank"] <= 4
    names = {e["name"] for e in created["entities"]}
    # `names` items and `name` fields share the key "name": what was created is what is opened.
    opened = gen.call(ENTITY_TOOLS[1])["names"]
    assert opened and set(opened) <= names


def test_paths_stay_under_the_root_and_written_paths_are_reused() -> None:
    write = {
        "name": "write_file",
        "description": "Create a new file",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    }
    gen = F.CallGen(root="/srv/ws", rng=random.Random(3))
    args = gen.call(write)
    assert args["path"].startswith("/srv/ws/") and args["path"].endswith(".txt")
    gen.learn_result(write, args, True, "ok")
    assert args["path"] in gen.paths
    reads = [gen.call(ENTITY_TOOLS[3])["path"] for _ in range(20)]
    assert args["path"] in reads and all(p.startswith("/srv/ws") for p in reads)


def test_sql_statements_follow_the_kinds_the_description_names() -> None:
    tool = {
        "name": "write_query",
        "description": "Execute an INSERT, UPDATE, or DELETE query on the SQLite database",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "SQL query"}},
            "required": ["query"],
        },
    }
    gen = F.CallGen(root="/srv/ws", rng=random.Random(0))
    gen.tables["orders"] = ["name"]
    stmts = [gen.call(tool)["query"] for _ in range(30)]
    assert all(s.split()[0] in ("INSERT", "UPDATE", "DELETE") for s in stmts)
    assert all("orders" in s for s in stmts)


def test_probes_are_read_only_calls_that_need_no_fresh_value() -> None:
    gen = F.CallGen(root="/srv/ws", rng=random.Random(0))
    probes = gen.probes(ENTITY_TOOLS)
    # read_graph: no arguments, a read verb; list_directory: the root; open_nodes needs names.
    assert ("read_graph", {}) in probes and ("list_directory", {"path": "/srv/ws"}) in probes
    assert all(name != "open_nodes" and name != "create_entities" for name, _ in probes)


def test_scoring_counts_disagreement_missed_state_and_values() -> None:
    root = "/srv/ws"
    real = ("write_file", {"path": "/srv/ws/a.txt"}, False, True, "Wrote /srv/ws/a.txt 12 bytes")
    synth_ok = ("write_file", {}, False, True, {"path": "/a.txt", "bytes": 12})
    t = F.score(real, synth_ok, root)
    assert (t.agree, t.reproduced, t.real_changes) == (1, 1, 1)
    assert t.recall_sum == pytest.approx(2 / 4)  # "/a.txt" and 12 of wrote, /a.txt, 12, bytes
    synth_err = ("write_file", {}, True, False, "not found")
    t = F.score(real, synth_err, root)
    assert (t.agree, t.reproduced, t.recall_sum, t.recall_n) == (0, 0, 0.0, 1)
    assert t.disagreements and "/srv/ws" not in t.disagreements[0]


@pytest.mark.slow
def test_benchmark_runs_against_the_real_memory_server(tmp_path: Path) -> None:
    missing = F.available()
    if "memory" in missing:
        pytest.skip(f"memory server {missing['memory']}")
    out = tmp_path / "fidelity.json"
    cmd = [sys.executable, str(BENCH / "fidelity.py"), "--real-servers", "--server", "memory"]
    cmd += ["--sequences", "1", "--length", "6", "--json", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=500, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "agree%" in done.stdout and "memory" in done.stdout
    row = json.loads(out.read_text())["servers"]["memory"]
    assert row["calls"] == 6 and row["tools"] == 9
    assert 0 <= row["agree_pct"] <= 100
