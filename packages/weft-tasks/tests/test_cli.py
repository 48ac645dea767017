"""`weft-tasks atomic` then `weft-tasks compose` on the fixture bundles, end to end through an
embedded MegaMCP host, and the one-line errors on hostile input."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import TaskGraph
from weft_tasks.atomic.library import load_library
from weft_tasks.atomic.megamcp import Registrar, megamcp_client
from weft_tasks.cli import main
from weft_tasks.grounding.reachability import replay


@pytest.fixture(autouse=True)
def fresh_console() -> Any:
    """The console singleton binds the stream it first saw; each test gets its own."""
    from weft_core.console import set_console, set_quiet

    set_console(None)
    yield
    set_console(None)
    set_quiet(None)


def _fixture() -> Any:
    path = Path(__file__).parent / "atomic" / "data" / "fixture_bundles.py"
    spec = importlib.util.spec_from_file_location("_weft_tasks_cli_fixture", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.integration
def test_atomic_then_compose(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundles = _fixture().build_bundles(tmp_path / "bundles")
    lib = tmp_path / "lib"
    assert main(["atomic", str(tmp_path / "bundles"), "-o", str(lib), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["certified"] == 4 and all(x["coverage"] == 1.0 for x in report["libraries"])
    assert {x.mcp for x in load_library(lib)} == set(bundles)

    out = tmp_path / "tasks"
    assert main(["compose", str(lib), "--n", "8", "-o", str(out), "--json", "--seed", "5"]) == 0
    corpus = json.loads(capsys.readouterr().out)
    assert sum(corpus["produced"].values()) == 8 and len(corpus["tasks"]) == 8
    assert corpus["quotas"] == {
        "Simple": 2,
        "Standard": 2,
        "Moderate": 2,
        "Complex": 1,
        "Expert": 1,
    }
    stats = corpus["stats"]
    assert {p["profile"]: p["tasks"] for p in stats["profiles"]}["Standard"] == 2
    assert json.loads((out / "corpus.json").read_text())["tasks"] == corpus["tasks"]
    graphs = [TaskGraph.load(out / "tasks" / f"{t}.json") for t in corpus["tasks"]]
    assert any(len(g.mcps) >= 2 for g in graphs) and len({d for g in graphs for d in g.mcps}) >= 3
    for g in graphs:
        assert set(g.initial_snapshots) == set(g.mcps) and g.final_checks and g.order
        for ref in g.initial_snapshots.values():
            assert (out / "snapshots" / f"{ref.sha256}.sqlite").exists()

    # the Done-when check: a fresh host on the same data replays every task's reference solution
    async def replay_all() -> list[str]:
        failures = []
        async with megamcp_client(data_dir=out / ".megamcp") as client:
            reg = Registrar(client)
            for g in graphs:
                paths = {m: bundles[m] for m in g.mcps}
                rep = await replay(
                    client, reg, g, {m: r.uri for m, r in g.initial_snapshots.items()}, paths
                )
                if not rep.passed or not {c.id for c in g.final_checks} <= set(rep.final_passing):
                    failures.append(f"{g.id}: {rep.diagnostic}")
        return failures

    assert asyncio.run(replay_all()) == []

    # A host in this process composes the same corpus as the default one (a prefork host with a
    # worker per core, on 2+ cores): it depends on the seed, never on where the replays ran.
    out2 = tmp_path / "tasks2"
    argv = ["compose", str(lib), "--n", "8", "-o", str(out2), "--json", "--seed", "5"]
    assert main([*argv, "--host-workers", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["tasks"] == corpus["tasks"]
    for t in corpus["tasks"]:
        rel = Path("tasks") / f"{t}.json"
        assert (out2 / rel).read_bytes() == (out / rel).read_bytes()


def test_hostile_input_gives_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from weft_core.console import set_console

    def run(*argv: str) -> int:
        set_console(None)  # bind the error line to this capture
        return main(list(argv))

    def err() -> str:  # the console wraps its one line at the terminal width
        return " ".join(capsys.readouterr().err.split())

    assert run("atomic", str(tmp_path / "missing"), "-o", str(tmp_path / "lib")) == 2
    first = err()
    assert "no such bundle folder" in first and "Traceback" not in first
    (tmp_path / "empty").mkdir()
    assert run("compose", str(tmp_path / "empty"), "--n", "3", "-o", str(tmp_path / "t")) == 2
    assert "no MCP library" in err()
    assert not (tmp_path / "t").exists()  # a bad input leaves no output or host folder behind
    bad = tmp_path / "p.toml"
    bad.write_text("[[profiles]]\nname = 'x'\n")
    lib = tmp_path / "lib2"
    (lib / "m").mkdir(parents=True)
    (lib / "m" / "library.json").write_text("{not json")
    assert (
        run("compose", str(lib), "--n", "3", "--profiles", str(bad), "-o", str(tmp_path / "t")) == 2
    )
    assert "p.toml" in err()
    assert run("compose", str(lib), "--n", "3", "-o", str(tmp_path / "t")) == 2
    assert "not a valid LibraryManifest" in err()
    (tmp_path / "t").mkdir()  # an output folder the user made stays, without a host folder
    assert run("compose", str(lib), "--n", "3", "-o", str(tmp_path / "t")) == 2
    err()
    assert (tmp_path / "t").is_dir() and not (tmp_path / "t" / ".megamcp").exists()
    assert run("compose", str(lib), "--n", "0", "-o", str(tmp_path / "t")) == 2
    err()
    # a bad option value names the option, not a pydantic traceback
    assert run("compose", str(lib), "--n", "3", "--host-workers", "-1", "-o", str(tmp_path)) == 2
    line = err()
    assert line.startswith("weft-tasks compose: --host-workers:") and "Traceback" not in line
    assert run("atomic", str(lib), "--concurrency", "0", "-o", str(tmp_path / "t")) == 2
    assert "--concurrency:" in err()


def test_host_workers_default_to_the_cores_of_the_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from weft_tasks.settings import TasksSettings, host_workers

    for cores, want in [({0}, 0), ({0, 1}, 2), (set(range(3)), 3), (set(range(64)), 4)]:
        monkeypatch.setattr("os.sched_getaffinity", lambda _pid, c=cores: c)
        assert host_workers(TasksSettings()) == want
    assert host_workers(TasksSettings(host_workers=0)) == 0  # explicit wins, 0 included
    monkeypatch.setenv("WEFT_TASKS_HOST_WORKERS", "1")
    assert host_workers(TasksSettings()) == 1
