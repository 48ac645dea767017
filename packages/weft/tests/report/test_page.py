import json
import re

from weft.cli import main
from weft.report import build_report, load_run, render_report


def test_the_page_is_self_contained(run_dir):
    html = render_report(load_run(run_dir))
    # nothing is fetched at view time: no src/href to another resource
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "<link" not in html and "@import" not in html
    assert html.count('<figure class="weft-figure"') == 8
    assert 'data-figure="evolution" data-state="missing"' in html
    assert "Not in this run: no evolve/rounds.json." in html
    assert 'id="weft-index"' in html and 'id="weft-blobs"' in html and 'id="viewer"' in html


def test_script_end_tags_in_data_cannot_break_the_page(run_dir):
    run = load_run(run_dir)
    run.tasks[0].id = "x<!--<script></script>"
    html = render_report(run)
    # only the page's own three script elements end, and no comment opens inside one
    assert html.count("</script>") == 3 and "<!--" not in html
    start = html.index('id="weft-index">') + len('id="weft-index">')
    index = json.loads(html[start : html.index("</script>", start)])
    assert index[0][0] == "x<!--<script></script>"


def test_a_run_with_only_reference_rollouts_says_so(run_dir):
    run = load_run(run_dir)
    run.traces = [t for t in run.traces if t.model == "reference-chain"]
    assert 'id="reference-notice"' in render_report(run)
    assert 'id="reference-notice"' not in render_report(load_run(run_dir))


def test_build_report_writes_next_to_the_run_by_default(run_dir):
    path = build_report(run_dir)
    assert path == run_dir / "report.html" and path.stat().st_size > 10_000


def test_the_report_command(run_dir, tmp_path, capsys):
    out = tmp_path / "x" / "r.html"
    assert main(["report", str(run_dir), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert out.exists() and f"report: {out}" in captured.out
    assert "1 thing(s) in" in captured.err  # the torn traces line
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "no such run folder" in capsys.readouterr().err


def test_weft_demo_ends_by_writing_the_report(run_dir, monkeypatch, capsys):
    # Wiring only: the pipeline itself is exercised by test_browser's slow demo run.
    from weft.summary import PipelineSummary

    async def finished_run(config, model=None, replay=None):
        return PipelineSummary.model_validate_json((run_dir / "summary.json").read_text())

    monkeypatch.setattr("weft.pipeline.run_pipeline", finished_run)
    assert main(["demo", "--out", str(run_dir), "--quiet"]) == 0
    assert f"report: {run_dir / 'report.html'}" in capsys.readouterr().out
    assert (run_dir / "report.html").exists()
