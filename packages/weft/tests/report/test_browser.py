"""The report in a real browser: headless Chromium over the DevTools protocol. Skipped, with
the reason, only when no Chromium can be found (`.ci/run` installs Debian's `chromium`)."""

from pathlib import Path

import pytest

from weft.report import build_report
from weft.report.browser import Chromium, find_chromium

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        find_chromium() is None,
        reason="no chromium on PATH and WEFT_CHROMIUM unset (apt-get install -y chromium)",
    ),
]

DRAWN = ["environments", "tools", "capacity", "tasks", "rollouts", "tool_errors"]


def check_report(
    html: Path, task_id: str, rollout_id: str, diff_rollout: str | None = None
) -> dict[str, object]:
    """Open the report, check every figure and the viewer, open one rollout (then, with
    `diff_rollout`, another, reading its turns' row-level diffs); returns what the page showed."""
    with Chromium() as page:
        page.open(html.as_uri())
        page.wait_for("document.body.dataset.viewerReady === '1'")
        states = page.evaluate(
            "Object.fromEntries([...document.querySelectorAll('figure.weft-figure')]"
            ".map(f => [f.dataset.figure, f.dataset.state]))"
        )
        svgs = page.evaluate(
            "[...document.querySelectorAll('figure.weft-figure[data-state=present] svg')]"
            ".filter(s => s.getBoundingClientRect().height > 50).length"
        )
        tasks = page.evaluate("document.querySelectorAll('#task-list .task-item').length")
        page.evaluate(f"document.querySelector('.task-item[data-task=\"{task_id}\"]').click()")
        page.wait_for("!!document.querySelector('#task-pane svg.dag')")
        nodes = page.evaluate("document.querySelectorAll('#task-pane svg.dag g.node').length")
        page.evaluate(
            f"document.querySelector('.open-rollout[data-rollout=\"{rollout_id}\"]').click()"
        )
        page.wait_for(f"document.querySelector('#rollout-pane').dataset.rollout === '{rollout_id}'")
        text = page.evaluate("document.querySelector('#rollout-pane').innerText")
        turns = page.evaluate("document.querySelectorAll('#rollout-pane .turn[data-node]').length")
        diff: object = None
        if diff_rollout is not None:
            page.evaluate(
                f"document.querySelector('.open-rollout[data-rollout=\"{diff_rollout}\"]').click()"
            )
            page.wait_for(
                f"document.querySelector('#rollout-pane').dataset.rollout === '{diff_rollout}'"
            )
            diff = page.evaluate(
                "[...document.querySelectorAll('#rollout-pane .turn[data-node]')].map(t => {"
                " const d = t.querySelector('.state-diff');"
                " return {node: t.dataset.node, since: d && d.dataset.since,"
                " tables: [...t.querySelectorAll('.diff-table')].map(x => x.dataset.table),"
                " heads: [...t.querySelectorAll('.diff-head')].map(x => x.innerText),"
                " ins: [...t.querySelectorAll('table.diff tr.ins')].map(r => r.innerText),"
                " changed: [...t.querySelectorAll('table.diff td.chg')].map(c => [c.innerText,"
                "   getComputedStyle(c).backgroundColor]),"
                " text: d ? d.innerText : ''}; })"
            )
        errors = page.console_errors()
    return {
        "states": states,
        "svgs": svgs,
        "tasks": tasks,
        "nodes": nodes,
        "text": text,
        "turns": turns,
        "diff": diff,
        "errors": errors,
    }


def test_the_report_opens_with_every_plot_and_a_working_trace_viewer(run_dir):
    html = build_report(run_dir)
    seen = check_report(html, "standard-0-00001", "r-policy", diff_rollout="r-teacher")
    assert seen["errors"] == []
    assert [k for k, v in seen["states"].items() if v == "present"] == DRAWN
    assert seen["states"]["evolution"] == seen["states"]["training"] == "missing"
    assert seen["svgs"] == len(DRAWN)
    assert seen["tasks"] == 1 and seen["nodes"] == 2 and seen["turns"] == 2
    text = seen["text"]
    assert "n2.c1 (field_equals): no row of ticket matches" in text  # the failed check and why
    assert "1 infrastructure retry; 1 discarded attempt(s)" in text
    assert "infrastructure: ServerCrash: helpdesk died" in text
    assert "2 attempts" in text
    assert "helpdesk_create_ticket" in text and "error: invalid email" in text
    assert "row-level state diff" in text.lower() and "no row or file changed" in text  # r-policy
    # r-teacher: the lookup turn changed nothing; the ticket turn inserted a ticket row and
    # updated its queue's count, the changed cells highlighted with old -> new.
    n1, n2 = seen["diff"]  # type: ignore[misc]
    assert (
        n1["since"] == "initial" and n1["tables"] == [] and "no row or file changed" in n1["text"]
    )
    assert n2["since"] == "n1" and n2["tables"] == ["queue", "ticket"]
    assert any("helpdesk · ticket" in h and "+1 inserted" in h for h in n2["heads"])
    assert any("~1 updated" in h for h in n2["heads"])
    assert len(n2["ins"]) == 1 and "T9" in n2["ins"][0] and "ada@x.io" in n2["ins"][0]
    cells = {text.replace("\n", " ") for text, _ in n2["changed"]}
    assert cells == {"4 → 5", "2026-01-01 → 2026-01-02"}
    assert all(bg not in ("rgba(0, 0, 0, 0)", "transparent") for _, bg in n2["changed"])


@pytest.mark.slow
async def test_the_report_of_a_small_demo_run_opens_in_chromium(tmp_path):
    from weft.config import parse_config
    from weft.pipeline import run_pipeline

    examples = Path(__file__).resolve().parents[4] / "examples"
    config = parse_config(
        {
            "pipeline": {"specs": ["mcps/crm.json", "mcps/email.json"], "out": str(tmp_path)},
            "envsynth": {"rounds": 1},
            "tasks": {"budget": 1, "n_tasks": 2, "profiles": ["Simple", "Standard"]},
            "rollouts": {
                "views": ["agentic/full", "simuser/partial"],
                "harnesses": ["teacher", "react"],
            },
        },
        base_dir=examples,
    )
    summary = await run_pipeline(config)
    html = build_report(Path(summary.out_dir))
    from weft.report.data import load_run

    run = load_run(Path(summary.out_dir))
    trace = run.traces[0]
    seen = check_report(html, trace.task_id, trace.id)
    assert seen["errors"] == []
    assert [k for k, v in seen["states"].items() if v == "present"] == DRAWN
    assert seen["tasks"] == len(run.tasks) and seen["turns"] == len(trace.segments)
    assert "Final verification" in seen["text"] and "reference" in seen["text"]
