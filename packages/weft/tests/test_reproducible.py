"""Issue 20, "Done when": the same inputs, configuration and seed give the same bytes, wherever
they are written, and a moved corpus stays valid.

The demo pipeline (a subset of examples/mcps, fewer tasks) is composed, grounded and rolled out
twice in subprocesses: into two unrelated folders, with different PYTHONHASHSEED values and
concurrency 1 vs 8. The two output trees must be byte-identical except for what the host's clock
writes (listed below). Then one corpus is moved to another folder: `weft verify` re-checks every
reference and hash there, and its tasks roll out again from the moved corpus, giving the same
traces.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.integration]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "mcps"
SPECS = ["crm.json", "helpdesk.json", "orders.json", "files.json"]

# Fields the clock writes: when a tool call started and how long it or a stage took. Creation
# times of artifacts (`created_at`) are NOT excluded: both runs pin them with SOURCE_DATE_EPOCH.
EXCLUDED_FIELDS = frozenset({"started_at", "duration_ms", "seconds"})
# The embedded MegaMCP host's own runtime state under OUT/megamcp (not artifacts): its registry
# database (rows carry registration times), and per-group folders and checkpoints of session
# groups, which are closed by the end of a run.
EXCLUDED_PATHS = (
    "megamcp/registry.sqlite",
    "megamcp/groups/",
    "megamcp/snapshots/",
    "megamcp/objects/checkpoints/",
)


def _config(folder: Path, out: Path, concurrency: int) -> Path:
    specs = ", ".join(json.dumps(str(EXAMPLES / s)) for s in SPECS)
    text = f"""
[pipeline]
specs = [{specs}]
out = {json.dumps(str(out))}
seed = 3

[envsynth]
rounds = 1

[tasks]
budget = 2
n_tasks = 3
profiles = ["Simple", "Standard"]

[rollouts]
views = ["agentic/full", "simuser/partial"]
harnesses = ["teacher", "react"]
concurrency = {concurrency}
"""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pipeline.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _run(args: list[str], hash_seed: str, cwd: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONHASHSEED": hash_seed,
        "SOURCE_DATE_EPOCH": "1767225600",
        "WEFT_QUIET": "1",
    }
    env.pop("WEFT_LLM_MODEL", None)
    return subprocess.Popen(
        [sys.executable, "-m", "weft.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait(proc: subprocess.Popen[str], timeout: float = 900) -> str:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out[-3000:]
    return out


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<excluded>" if k in EXCLUDED_FIELDS else _scrub(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _comparable(path: Path, rel: str) -> bytes:
    """The file's bytes, with only the excluded fields' values replaced. JSON keeps its key
    order when parsed, so any change of order or formatting still shows."""
    data = path.read_bytes()
    if rel.endswith(".jsonl"):
        lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        return "\n".join(json.dumps(_scrub(x)) for x in lines).encode()
    if rel.endswith(".json"):
        return json.dumps(_scrub(json.loads(data)), indent=1).encode()
    return data


def _tree(root: Path) -> dict[str, Path]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if (
            p.is_file()
            and "__pycache__" not in p.parts
            and not any(rel.startswith(x) for x in EXCLUDED_PATHS)
        ):
            out[rel] = p
    return out


def _assert_same_tree(a: Path, b: Path) -> int:
    ta, tb = _tree(a), _tree(b)
    assert sorted(ta) == sorted(tb), {
        "only in A": sorted(set(ta) - set(tb))[:10],
        "only in B": sorted(set(tb) - set(ta))[:10],
    }
    differing = [rel for rel in ta if _comparable(ta[rel], rel) != _comparable(tb[rel], rel)]
    assert not differing, differing[:10]
    return len(ta)


def _no_absolute_paths(root: Path, *places: Path) -> None:
    needles = [str(p.resolve()).encode() for p in places]
    for rel, p in _tree(root).items():
        data = p.read_bytes()
        hit = next((n for n in needles if n in data), None)
        assert hit is None, f"{rel} holds the local path {hit!r}"


def test_same_bytes_anywhere_and_a_moved_corpus_verifies_and_rolls_out(tmp_path: Path) -> None:
    out_a = tmp_path / "a" / "out"
    out_b = tmp_path / "somewhere" / "else" / "b"
    cfg_a = _config(tmp_path / "cfg_a", out_a, concurrency=1)
    cfg_b = _config(tmp_path / "cfg_b" / "nested", out_b, concurrency=8)
    run_a = _run(["run", str(cfg_a), "--quiet"], "1", tmp_path)
    run_b = _run(["run", str(cfg_b), "--quiet"], "4242", tmp_path / "cfg_b")
    _wait(run_a)
    _wait(run_b)

    traces = sorted(out_a.glob("stages/rollouts/*/traces.jsonl"))
    assert len(traces) == 1 and traces[0].read_text().count("\n") >= 6
    files = _assert_same_tree(out_a, out_b)
    assert files > 100
    _no_absolute_paths(out_a, out_a, out_b, EXAMPLES, tmp_path)
    _no_absolute_paths(out_b, out_a, out_b, EXAMPLES, tmp_path)

    # Move corpus A; verify it where it lies now, then roll its tasks out again there.
    moved = tmp_path / "moved" / "corpus"
    moved.parent.mkdir()
    shutil.move(str(out_a), moved)
    assert not out_a.exists()
    report = _wait(_run(["verify", str(moved)], "7", tmp_path))
    assert "corpus: 0 problem(s)" in report
    before = (moved / traces[0].relative_to(out_a)).read_bytes()
    shutil.rmtree(moved / traces[0].relative_to(out_a).parent)
    _wait(_run(["run", str(cfg_a), "--quiet", "--out", str(moved)], "9", tmp_path))
    summary = json.loads((moved / "summary.json").read_text())
    assert summary["stages"]["envs"] == "cached" and summary["stages"]["compose"] == "cached"
    assert summary["stages"]["rollouts"] == "ran"
    after = (moved / traces[0].relative_to(out_a)).read_bytes()
    assert _comparable_lines(after) == _comparable_lines(before)
    report = _wait(_run(["verify", str(moved)], "11", tmp_path))
    assert "corpus: 0 problem(s)" in report
    assert "traces verified" in report


def _comparable_lines(data: bytes) -> list[str]:
    return [json.dumps(_scrub(json.loads(x))) for x in data.decode().splitlines() if x.strip()]
