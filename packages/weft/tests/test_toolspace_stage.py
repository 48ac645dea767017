"""The `[toolspace]` stage: ToolSpace tasks (weft-toolspace) exported with their stored s_0 go
through the same rollout stage as composed tasks, and `weft verify` checks them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from weft.cli import main
from weft.config import load_config, parse_config
from weft.errors import ConfigError
from weft.stages import StageStore
from weft.toolspace_stage import stage_toolspace
from weft.verify import verify_corpus
from weft_tasks.rollout import TraceSink
from weft_toolspace.testing import record_staff_episode

CONFIG = """
[pipeline]
out = "out"
seed = 1

[rollouts]
views = ["agentic/full"]
harnesses = ["teacher"]
concurrency = 1

[toolspace]
enabled = true
servers = ["sqlite", "memory"]
traces = "traces.jsonl"
length = 5
envs = 1
attempts = 3
"""


def test_toolspace_section_parses_and_without_specs_the_run_is_toolspace_only(
    tmp_path: Path,
) -> None:
    cfg = parse_config({"toolspace": {"enabled": True, "length": 9}}, base_dir=tmp_path)
    assert cfg.toolspace_only and cfg.toolspace.length == 9
    assert not parse_config({"toolspace": {"enabled": False}}, base_dir=tmp_path).toolspace_only
    with_specs = parse_config(
        {"pipeline": {"specs": ["a.json"]}, "toolspace": {"enabled": True}}, base_dir=tmp_path
    )
    assert not with_specs.toolspace_only
    with pytest.raises(ConfigError, match=r"toolspace\.walks"):
        parse_config({"toolspace": {"walks": 3}}, base_dir=tmp_path)


async def test_bad_toolspace_input_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    store = StageStore(tmp_path / "stages")
    missing = parse_config(
        {"toolspace": {"enabled": True, "traces": "no.jsonl"}}, base_dir=tmp_path
    )
    with pytest.raises(ConfigError, match=r"\[toolspace\]\.traces: 'no.jsonl'"):
        await stage_toolspace(missing, store, None, None, None)
    unknown = parse_config(
        {"toolspace": {"enabled": True, "servers": ["sqlite", "jira"]}}, base_dir=tmp_path
    )
    with pytest.raises(ConfigError, match=r"\[toolspace\]\.servers: unknown jira"):
        await stage_toolspace(unknown, store, None, None, None)


@pytest.fixture
async def recorded(tmp_path: Path) -> Path:
    """Two trajectories recorded on the real sqlite and memory servers, as a traces file."""
    from weft_megamcp import MegaMCPClient, MegaMCPHost, MegaMCPSettings
    from weft_toolspace import servers
    from weft_toolspace.pipeline import save_traces
    from weft_toolspace.settings import ToolSpaceSettings

    home = ToolSpaceSettings().server_home
    _ok, failed = servers.install_all(["sqlite", "memory"], home)
    if failed:
        pytest.skip("real MCP servers not installable: " + "; ".join(failed.values())[:300])
    settings = MegaMCPSettings(data_dir=tmp_path / "rec", sandbox_ro_paths=[home.resolve()])
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        await servers.register(client, ["sqlite", "memory"], home)
        traces = [
            await record_staff_episode(client, n, f"rec{i}")
            for i, n in enumerate(["Ada Lovelace", "Alan Kay"])
        ]
    path = tmp_path / "traces.jsonl"
    save_traces(traces, path)
    return path


@pytest.mark.integration
@pytest.mark.slow
def test_weft_run_rolls_out_toolspace_tasks_and_weft_verify_accepts_them(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "pipeline.toml"
    cfg.write_text(CONFIG, encoding="utf-8")
    assert main(["run", str(cfg), "--quiet"]) == 0
    out = load_config(cfg).out_dir
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["stages"]["toolspace"] == "ran"
    assert summary["tasks_by_profile"].get("ToolSpace", 0) >= 1
    assert summary["traces"] >= 1 and summary["traces_verified"] == summary["traces"]
    tasks = sorted(out.glob("stages/toolspace/*/tasks/*.json"))
    assert tasks
    exported = json.loads(tasks[0].read_text(encoding="utf-8"))
    assert set(exported["initial_snapshots"]) == {
        n["task"]["mcp"] for n in exported["nodes"]
    }  # every MCP of the task starts from a stored s_0
    traces, unreadable = TraceSink(out / summary["traces_path"]).load()
    assert traces and not unreadable
    # The teacher replays the reference from the stored s_0: every check of the task holds.
    assert all(t.reward == 1.0 for t in traces), [(t.reward, t.failures) for t in traces]

    assert main(["verify", str(out)]) == 0
    check = verify_corpus(out)
    assert check.checked["task graphs"] == len(tasks) and check.checked["snapshots"] >= 1

    # The stage is keyed by its inputs: a rerun reuses it.
    assert main(["run", str(cfg), "--quiet"]) == 0
    again = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert again["stages"]["toolspace"] == "cached"

    # verify reads the toolspace stage's snapshot copies: a damaged one is reported.
    copy = next(out.glob("stages/toolspace/*/snapshots/*.sqlite"))
    copy.write_bytes(copy.read_bytes() + b"x")
    capsys.readouterr()
    assert main(["verify", str(out)]) == 1
    assert "holds other bytes" in capsys.readouterr().err
