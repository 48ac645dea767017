"""The OpenRLHF launcher's plan, files and checks (plain Python: runs in normal CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from weft_core.models import AtomicTask, TaskGraph, TaskNode
from weft_train.errors import TrainUserError
from weft_train.openrlhf.config import ExecutorConfig
from weft_train.openrlhf.launch import Hardware, LaunchConfig, main, plan, write


def crm_task(task_id: str) -> TaskGraph:
    intents = ["Find the customer with email ann@ex.com", "Upgrade that customer to vip"]
    nodes = [
        TaskNode(
            id=f"n{i}", task=AtomicTask(id=f"a{i}", mcp="crm", intent=t, tool_chain=["x"]), intent=t
        )
        for i, t in enumerate(intents)
    ]
    return TaskGraph(id=task_id, objective="Make Ann a VIP", nodes=nodes, order=["n0", "n1"])


def tasks(tmp_path: Path, n: int = 3) -> Path:
    folder = tmp_path / "tasks"
    folder.mkdir(parents=True)
    for i in range(n):
        crm_task(f"task-{i}").save(folder / f"task-{i}.json")
    return folder


def config(tmp_path: Path, **kw: object) -> LaunchConfig:
    fields: dict[str, object] = {
        "model": "/models/sft",
        "tasks_dir": kw.pop("tasks_dir") if "tasks_dir" in kw else tasks(tmp_path),
        "out_dir": tmp_path / "run",
        "megamcp_url": "http://10.0.0.2:7000",
        "admin_token": "secret",
    }
    return LaunchConfig.model_validate(fields | kw)


def flag(argv: list[str], name: str, n: int = 1) -> list[str]:
    i = argv.index(name)
    return argv[i + 1 : i + 1 + n]


def test_plan_has_the_papers_settings_and_groups_of_g(tmp_path: Path) -> None:
    p = plan(config(tmp_path, group_size=8, tasks_per_step=4))
    a = p.argv
    assert flag(a, "--rollout.n_samples_per_prompt") == ["8"]  # reshape(-1, G) = one turn's group
    assert flag(a, "--rollout.batch_size") == ["4"] and flag(a, "--train.batch_size") == ["32"]
    assert flag(a, "--algo.advantage.is_correction_level") == ["token"]
    assert flag(a, "--algo.advantage.is_correction_mode") == ["mask"]
    assert flag(a, "--algo.advantage.is_correction_gating") == ["ratio"]
    assert flag(a, "--algo.advantage.is_correction_threshold", 2) == ["0.5", "2.0"]
    assert "--algo.kl.use_loss" in a and flag(a, "--algo.kl.estimator") == ["k3"]
    assert "--algo.dynamic_filtering_enable" in a and "--train.async_enable" not in a
    assert flag(a, "--rollout.top_p") == ["1.0"]
    assert p.command[1:3] == ["-m", "weft_train.openrlhf.train"]
    assert [r["label"] for r in p.prompts] == ["task-0", "task-1", "task-2"]
    assert p.prompts[0]["prompt"] == "Find the customer with email ann@ex.com"


def test_write_binds_the_agent_file_to_its_config(tmp_path: Path) -> None:
    p = plan(config(tmp_path))
    write(p)
    run = tmp_path / "run"
    cfg = ExecutorConfig.model_validate_json((run / "executor.json").read_text())
    assert cfg.group_size == 16 and cfg.tasks_dir == (tmp_path / "tasks").resolve()
    agent = (run / "agent_func.py").read_text()
    assert f"configured_executor({str((run / 'executor.json').resolve())!r})" in agent
    compile(agent, "agent_func.py", "exec")
    rows = [json.loads(line) for line in (run / "prompts.jsonl").read_text().splitlines()]
    assert [r["label"] for r in rows] == ["task-0", "task-1", "task-2"]
    assert flag(p.argv, "--train.agent_func_path") == [str((run / "agent_func.py").resolve())]


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"hardware": Hardware(gpus=8, vllm_tp=3)}, "vLLM engines of TP 3"),
        ({"hardware": Hardware(gpus=1, micro_batch=3), "group_size": 4}, "micro-batches of 3"),
        ({"max_new_tokens": 4096, "max_len": 4096}, "leaves no room"),
        ({"extra_args": ["--train.async_enable"]}, "synchronous trainer"),
        ({"hardware": Hardware(gpus=8), "group_size": 2, "tasks_per_step": 1}, "cannot feed 8"),
    ],
)
def test_inconsistent_plans_are_refused_with_the_reason(
    tmp_path: Path, kw: dict[str, object], needle: str
) -> None:
    with pytest.raises(TrainUserError, match=needle):
        plan(config(tmp_path, **kw))


def test_bad_task_folders_are_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TrainUserError, match="no TaskGraph JSON"):
        plan(config(tmp_path, tasks_dir=empty))
    folder = tasks(tmp_path / "x", n=1)
    (folder / "task-0.json").rename(folder / "other.json")
    with pytest.raises(TrainUserError, match=r"must be named task-0\.json"):
        plan(config(tmp_path, tasks_dir=folder))
    (folder / "broken.json").write_text("{")
    with pytest.raises(TrainUserError, match=r"broken.json: not a TaskGraph"):
        plan(config(tmp_path, tasks_dir=folder))


def test_dry_run_prints_the_command_and_writes_the_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tasks(tmp_path)
    argv = ["--model", "/m", "--tasks-dir", str(folder), "--out", str(tmp_path / "run")]
    argv += ["--megamcp-url", "http://h:1", "--admin-token", "t", "--preset", "tiny"]
    assert main([*argv, "--dry-run", "--no-openrlhf-check", "--", "--train.seed", "7"]) == 0
    out = capsys.readouterr().out
    assert "weft_train.openrlhf.train" in out and "--actor.num_gpus_per_node 1" in out
    assert out.rstrip().endswith("--train.seed 7")
    assert (tmp_path / "run" / "launch.json").is_file()
    assert main([*argv, "--gpus", "3", "--dry-run", "--no-openrlhf-check"]) == 2
    assert "cannot feed 3" in capsys.readouterr().err


@pytest.mark.slow  # a fresh interpreter per script: tens of seconds on a loaded 2-core machine
@pytest.mark.integration
@pytest.mark.parametrize("size", ["8b", "14b"])
def test_launch_scripts_dry_run(tmp_path: Path, size: str) -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "openrlhf" / f"launch_{size}.sh"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    args = ["/models/sft", str(tasks(tmp_path)), str(tmp_path / "run"), "http://h:1", "tok"]
    done = subprocess.run(
        ["bash", str(script), *args, "--dry-run", "--no-openrlhf-check"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        "--actor.num_gpus_per_node 8" in done.stdout
        and "--rollout.n_samples_per_prompt 16" in done.stdout
    )
