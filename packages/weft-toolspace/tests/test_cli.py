from __future__ import annotations

import json
from pathlib import Path

import pytest

from weft_toolspace.cli import main


def _transcript(i: int) -> dict[str, object]:
    return {
        "id": f"t{i}",
        "messages": [
            {"role": "user", "content": "tidy the notes"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": {"name": "fs__list_directory", "arguments": '{"path": "."}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": f"[FILE] note{i}.txt"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "b",
                        "type": "function",
                        "function": {
                            "name": "fs__read_text_file",
                            "arguments": json.dumps({"path": f"note{i}.txt"}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "b", "content": "remember the milk"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "d",
                        "type": "function",
                        "function": {
                            "name": "fs__write_file",
                            "arguments": json.dumps({"path": "/etc/x"}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "d", "content": "Error: EACCES"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {
                            "name": "fs__get_file_info",
                            "arguments": json.dumps({"path": f"note{i}.txt"}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": '{"size": 120}'},
        ],
    }


def test_mine_and_cluster_from_transcripts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps(_transcript(i)) + "\n" for i in range(3)) + "{broken\n")
    out = tmp_path / "run"
    assert main(["mine", str(src), "-o", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["traces"] == 3 and summary["skipped"] == 1
    graph = json.loads((out / "graph.json").read_text())
    kinds = sorted(e["kind"] for e in graph["edges"])
    assert kinds == ["data", "retry"]  # list -> read (file name), failed write -> file info
    assert main(["cluster", "-o", str(out)]) == 0
    envs = json.loads((out / "environments.json").read_text())
    assert sum(len(e["nodes"]) for e in envs) == len(graph["nodes"])


def test_stage_without_its_input_fails_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["walk", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "graph.json is missing" in err
