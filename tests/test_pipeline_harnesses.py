"""`weft run` with harnesses = ["react", "hermes", "openclaw"] and a configured policy model:
the scripted OpenAI-compatible server on 127.0.0.1 (streaming, real tool calls, token ids)
playing each composed task's reference solution (label: reference — it reads the answer key, so
the pass rate checks the plumbing, not a policy). Every harness's model calls go through the
capture gateway; every trace must verify (`weft verify`) and carry its captured calls.
Skipped, with the installer's reason, only when a harness cannot be installed."""

from pathlib import Path

import pytest

from weft.config import parse_config
from weft.pipeline import run_pipeline
from weft_core.models import TaskGraph
from weft_tasks.harness.external import HarnessSettings, install, installed
from weft_tasks.rollout import TraceSink, trace_ledger_problems
from weft_tasks.testing import ScriptedOpenAIServer, reference_replies_by_brief

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
HARNESSES = ["react", "hermes", "openclaw"]


async def test_weft_run_with_react_hermes_and_openclaw(tmp_path, capsys):
    home = HarnessSettings().home
    for name in ("hermes", "openclaw"):
        if installed(name, home) is None:
            try:
                install(name, home)
            except Exception as exc:
                pytest.skip(f"{name} cannot be installed: {type(exc).__name__}: {exc}")
    out = tmp_path / "out"

    def composed() -> list[TaskGraph]:
        return [TaskGraph.load(p) for p in sorted(out.glob("stages/compose/*/tasks/*.json"))]

    server = ScriptedOpenAIServer(reference_replies_by_brief(composed), model="weft-scripted")
    async with server.running() as url:
        config = parse_config(
            {
                "pipeline": {"specs": ["mcps/crm.json", "mcps/helpdesk.json"], "out": str(out)},
                "envsynth": {"rounds": 2},
                "tasks": {"budget": 1, "n_tasks": 1, "profiles": ["Simple"]},
                "rollouts": {
                    "views": ["agentic/full"],
                    "harnesses": HARNESSES,
                    "concurrency": 3,
                    "max_infra_retries": 0,
                    "model": f"vllm:weft-scripted@{url}",
                },
            },
            base_dir=EXAMPLES,
        )
        summary = await run_pipeline(config)

    n_tasks = sum(summary.tasks_by_profile.values())
    assert n_tasks >= 1
    assert summary.traces == n_tasks * len(HARNESSES)
    assert summary.traces_verified == summary.traces, summary.trace_problems
    assert {r.harness for r in summary.rollouts} == set(HARNESSES)
    assert all(r.checkpoint_pass_rate == 1.0 for r in summary.rollouts), summary.rollouts
    rows = {r.harness: r for r in summary.model_calls}
    assert set(rows) == set(HARNESSES)
    for row in rows.values():
        assert row.calls >= 2 and row.calls_with_ids == row.calls == row.calls_tied
        assert row.failed_calls == 0
    traces, problems = TraceSink(Path(summary.traces_path)).load()
    assert problems == []
    for t in traces:
        assert t.error is None, t.error
        assert trace_ledger_problems(t.messages, t.ledger) == []
        assert t.captured_calls and all(c.has_token_ids for c in t.captured_calls)
    # the gateway also kept the full requests, one JSONL per rollout
    assert len(list(out.glob("stages/rollouts/*/captures/*.jsonl"))) == summary.traces

    from weft.cli import main

    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "Model calls captured by the gateway" in shown and "openclaw" in shown
    print(shown)
