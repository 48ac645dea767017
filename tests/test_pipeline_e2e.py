"""End to end across packages: specs -> envsynth -> atomic tasks -> composition -> rollouts
through a real embedded MegaMCP, then a rerun that must skip every finished stage."""

from pathlib import Path

import pytest

from weft.config import parse_config
from weft.pipeline import run_pipeline
from weft_tasks.rollout import TraceSink, trace_ledger_problems

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


async def test_pipeline_runs_end_to_end_and_resumes(tmp_path):
    config = parse_config(
        {
            "pipeline": {
                "specs": ["mcps/crm.json", "mcps/helpdesk.json"],
                "out": str(tmp_path / "out"),
            },
            "envsynth": {"rounds": 2},
            "tasks": {"budget": 1, "n_tasks": 2, "profiles": ["Simple"]},
            "rollouts": {
                "views": ["agentic/full", "simuser/vague"],
                "harnesses": ["teacher", "react"],
                "concurrency": 4,
            },
        },
        base_dir=EXAMPLES,
    )
    first = await run_pipeline(config)
    assert first.mcps_certified == 2
    assert sum(first.tasks_by_profile.values()) >= 1
    assert all(v == "ran" for v in first.stages.values()), first.stages
    n_tasks = sum(first.tasks_by_profile.values())
    assert first.traces == n_tasks * 2 * 2
    assert {(r.view, r.harness) for r in first.rollouts} == {
        ("agentic/full", "teacher"),
        ("agentic/full", "react"),
        ("simuser/vague", "teacher"),
        ("simuser/vague", "react"),
    }
    # Reference policies on certified, grounded tasks: every checkpoint passes, and every trace
    # agrees with the ledger MegaMCP recorded.
    assert all(r.checkpoint_pass_rate == 1.0 for r in first.rollouts), first.rollouts
    assert first.traces_verified == first.traces, first.trace_problems
    assert first.traces_path and not Path(first.traces_path).is_absolute()  # corpus-relative
    traces, problems = TraceSink(config.out_dir / first.traces_path).load()
    assert problems == [] and len(traces) == first.traces
    for t in traces:
        assert trace_ledger_problems(t.messages, t.ledger) == []
        assert len(t.segments) >= 2 and all(s.outcome is not None for s in t.segments)

    from weft.cli import main

    assert main(["verify", str(config.out_dir)]) == 0

    again = await run_pipeline(config)
    assert set(again.stages.values()) == {"cached"}, again.stages
    assert again.traces == first.traces and again.traces_path == first.traces_path
    assert (Path(config.out_dir) / "summary.json").exists()
