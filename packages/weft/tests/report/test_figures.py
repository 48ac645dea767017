import json
import re

from weft.report.data import load_run
from weft.report.figures import all_figures
from weft.report.formats import CURVES_PATH, ROUNDS_PATH
from weft.report.stats import rollout_cells, task_shape, tool_errors


def test_rollout_cells_split_reference_runs_from_model_runs(run_dir):
    cells = {c.model: c for c in rollout_cells(load_run(run_dir))}
    assert cells["reference-chain"].reference and not cells["openai:gpt-4o-mini"].reference
    policy = cells["openai:gpt-4o-mini"]
    assert policy.checkpoint_pass_rate == 0.5 and policy.task_success_rate == 0.0
    assert policy.tool_error_rate == 0.5
    assert cells["reference-chain"].task_success_rate == 1.0


def test_tool_errors_are_counted_per_mcp_and_tool_with_reference_apart(run_dir):
    per_mcp, per_tool = tool_errors(load_run(run_dir))
    helpdesk = next(r for r in per_mcp if r.name == "helpdesk")
    assert (helpdesk.calls, helpdesk.errors, helpdesk.rate) == (1, 1, 1.0)
    assert (helpdesk.reference_calls, helpdesk.reference_errors) == (1, 0)
    assert per_tool[0].name == "helpdesk.create_ticket"


def test_task_shape_counts_turns_mcps_and_domains(run_dir):
    shape = task_shape(load_run(run_dir))
    assert shape.by_profile == {"Standard": 1}
    assert shape.turns == {"Standard": [2]} and shape.mcps == [2] and shape.domains == [2]


def test_every_figure_is_drawn_or_says_why_not(run_dir):
    figures = {f.key: f for f in all_figures(load_run(run_dir))}
    assert list(figures) == [
        "environments",
        "tools",
        "capacity",
        "tasks",
        "rollouts",
        "tool_errors",
        "evolution",
        "training",
    ]
    for key in ("environments", "tools", "capacity", "tasks", "rollouts", "tool_errors"):
        assert figures[key].svg and figures[key].svg.startswith("<svg"), key
    assert figures["evolution"].svg is None and "rounds.json" in figures["evolution"].missing
    assert figures["training"].missing == "no train/curves.json"
    assert "[reference]" in figures["rollouts"].svg  # the reference row is labelled
    assert "Finance" in figures["environments"].svg  # text stays text
    # ids of several figures on one page never collide
    ids = [i for f in figures.values() if f.svg for i in re.findall(r'id="([^"]+)"', f.svg)]
    assert len(ids) == len(set(ids))


def test_an_empty_run_draws_nothing_and_says_so(tmp_path):
    figures = all_figures(load_run(tmp_path))
    assert all(f.svg is None and f.missing for f in figures)


def test_curves_and_rounds_are_drawn_with_reference_runs_marked(run_dir):
    (run_dir / CURVES_PATH).parent.mkdir()
    (run_dir / CURVES_PATH).write_text(
        json.dumps(
            {
                "runs": [
                    {
                        "name": "grpo-8b",
                        "points": [
                            {"step": s, "reward": s / 10, "entropy": 2 - s / 10} for s in range(5)
                        ],
                    },
                    {
                        "name": "teacher-sft",
                        "reference": True,
                        "points": [{"step": 0, "reward": 1.0}],
                    },
                ]
            }
        )
    )
    (run_dir / ROUNDS_PATH).parent.mkdir()
    (run_dir / ROUNDS_PATH).write_text(
        json.dumps(
            {
                "rounds": [
                    {
                        "round": r,
                        "tool_error_rate": 0.02 - r * 0.003,
                        "scores": {"pass": 0.5 + r / 20},
                        "revisions": {"environment": 3 - r, "task": 1},
                    }
                    for r in range(4)
                ]
            }
        )
    )
    figures = {f.key: f for f in all_figures(load_run(run_dir))}
    training = figures["training"]
    assert training.svg and "entropy" in training.svg and "teacher-sft [reference]" in training.svg
    assert "Reference runs: teacher-sft." in training.caption
    evolution = figures["evolution"]
    assert evolution.svg and "revisions" in evolution.svg and "environment" in evolution.svg


def test_a_figure_that_cannot_be_drawn_costs_only_itself(run_dir, monkeypatch):
    from weft.report import figures

    def broken(run):
        raise ValueError("bad bins")

    broken.__name__ = "tasks"
    monkeypatch.setattr(figures, "FIGURES", [figures.environments, broken])
    drawn = figures.all_figures(load_run(run_dir))
    assert drawn[0].svg and drawn[1].svg is None
    assert drawn[1].missing == "could not be drawn (ValueError: bad bins)"
