import json
import shutil

from weft.report.data import load_run
from weft.report.formats import CURVES_PATH, ROUNDS_PATH


def test_a_run_folder_is_read_into_typed_records(run_dir):
    run = load_run(run_dir)
    assert [(e.name, e.domain, e.status) for e in run.envs] == [
        ("broken", "Finance", "failed"),
        ("crm", "CRM", "certified"),
        ("helpdesk", "Customer Support", "certified"),
    ]
    assert {x.mcp: x.tasks for x in run.libraries} == {"crm": 3, "helpdesk": 2}
    assert [g.id for g in run.tasks] == ["standard-0-00001"]
    assert sorted(t.id for t in run.traces) == ["r-policy", "r-teacher"]
    # The infrastructure failure that the rerun replaced is kept as a discarded attempt.
    [attempt] = run.discarded["r-policy"]
    assert attempt.error.startswith("infrastructure: ")
    # A torn last line costs that line only, and says where it is.
    assert len(run.problems) == 1 and "traces.jsonl:4: not a trace" in run.problems[0]
    assert run.domain_of()["helpdesk"] == "Customer Support"


def test_an_empty_folder_gives_an_empty_run_not_an_error(tmp_path):
    run = load_run(tmp_path)
    assert run.envs == [] and run.tasks == [] and run.traces == [] and run.problems == []


def test_a_moved_run_folder_is_still_found(run_dir, tmp_path):
    moved = shutil.move(run_dir, tmp_path / "moved")
    run = load_run(moved)
    assert len(run.traces) == 2 and run.envs[1].domain == "CRM" and run.libraries


def test_envs_of_other_configs_in_the_stage_store_are_left_out(run_dir):
    extra = run_dir / "stages" / "envs" / "zz" / "done.json"
    extra.parent.mkdir(parents=True)
    extra.write_text(json.dumps({"slug": "other", "status": "certified"}))
    assert "other" not in {e.name for e in load_run(run_dir).envs}


def test_curves_and_rounds_are_read_and_a_bad_file_is_a_problem_not_a_crash(run_dir):
    (run_dir / CURVES_PATH).parent.mkdir()
    (run_dir / CURVES_PATH).write_text(
        json.dumps(
            {
                "format": "weft.train.curves/1",
                "runs": [{"name": "grpo", "points": [{"step": 0, "reward": 0.2, "note": "x"}]}],
            }
        )
    )
    (run_dir / ROUNDS_PATH).parent.mkdir()
    (run_dir / ROUNDS_PATH).write_text('{"rounds": [{"tool_error_rate": 0.1}]}')  # no round
    run = load_run(run_dir)
    assert run.curves is not None and run.curves.metric_names() == ["reward"]
    assert run.rounds is None
    assert any("rounds.json: not a EvolutionRounds file" in p for p in run.problems)
