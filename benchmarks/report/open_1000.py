"""How fast the report of a 1,000-task corpus is built and opens in headless Chromium.

The corpus is made from a real run folder (default `.weft/demo`, written by `uv run weft demo`):
its environments and libraries as they are, and its composed tasks and their traces replicated
under new ids (traces re-sealed) until there are `--tasks` tasks, so every task carries the demo's
real graph and rollouts (6 per task with the demo config).

    uv run python benchmarks/report/open_1000.py [--from .weft/demo] [--tasks 1000] [--json out.json]

Measured: report build time (read run, figures, viewer data), page size, and in Chromium, over
`--loads` fresh tabs: DOMContentLoaded, load event, viewer ready, and the time to open one task
and one rollout. Goal: the page opens (load event) in under 3 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from weft.report.browser import Chromium, find_chromium
from weft.report.data import load_run
from weft.report.figures import all_figures
from weft.report.page import render_report
from weft.report.viewer import viewer_data
from weft.summary import PipelineSummary
from weft_core.models import TaskGraph, Trace


def make_corpus(source: Path, out: Path, n_tasks: int) -> tuple[int, int]:
    """Write a run folder of `n_tasks` tasks under `out`; returns (tasks, traces)."""
    run = load_run(source)
    if not run.tasks or not run.traces:
        sys.exit(f"{source}: no composed tasks or traces; run `uv run weft demo` first")
    for stage in ("envs", "atomic"):
        shutil.copytree(source / "stages" / stage, out / "stages" / stage, symlinks=True)
    by_task: dict[str, list[Trace]] = {}
    for t in run.traces:
        by_task.setdefault(t.task_id, []).append(t)
    compose = out / "stages" / "compose" / "bench"
    traces_path = out / "stages" / "rollouts" / "bench" / "traces.jsonl"
    traces_path.parent.mkdir(parents=True)
    ids: list[str] = []
    n_traces = 0
    with traces_path.open("w", encoding="utf-8") as fh:
        for i in range(n_tasks):
            graph = run.tasks[i % len(run.tasks)]
            new_id = f"{graph.id}-x{i:04d}"
            clean = TaskGraph.model_validate_json(
                graph.model_copy(update={"id": new_id, "content_hash": None}).model_dump_json()
            )
            clean.save(compose / "tasks" / f"{new_id}.json")
            ids.append(new_id)
            for t in by_task.get(graph.id, []):
                copy = t.model_copy(
                    update={"id": f"{t.id}-x{i:04d}", "task_id": new_id, "content_hash": None}
                )
                fh.write(copy.sealed().model_dump_json() + "\n")
                n_traces += 1
    (compose / "done.json").write_text(json.dumps({"tasks": ids, "failures": []}))
    summary = run.summary or PipelineSummary(out_dir=str(out))
    summary = summary.model_copy(
        update={"out_dir": str(out), "traces_path": str(traces_path), "traces": n_traces}
    )
    (out / "summary.json").write_text(summary.model_dump_json(indent=1))
    return n_tasks, n_traces


def build(run_dir: Path, html: Path) -> dict[str, float]:
    t0 = time.perf_counter()
    run = load_run(run_dir)
    t1 = time.perf_counter()
    all_figures(run)
    t2 = time.perf_counter()
    viewer_data(run)
    t3 = time.perf_counter()
    html.write_text(render_report(run), encoding="utf-8")  # figures + viewer again, plus page
    t4 = time.perf_counter()
    return {
        "read_run_s": t1 - t0,
        "figures_s": t2 - t1,
        "viewer_data_s": t3 - t2,
        "render_page_s": t4 - t3,
        "html_mib": html.stat().st_size / 2**20,
    }


def open_in_chromium(html: Path, loads: int) -> dict[str, float]:
    rows: list[dict[str, float]] = []
    with Chromium() as page:
        for _ in range(loads):
            page.open("about:blank")
            page.open(html.as_uri())
            page.wait_for("document.body.dataset.viewerReady === '1'", timeout=120)
            nav = page.evaluate(
                "(() => { const n = performance.getEntriesByType('navigation')[0];"
                " return {dom: n.domContentLoadedEventEnd, load: n.loadEventEnd,"
                " now: performance.now()}; })()"
            )
            open_ms = page.evaluate(
                "(async () => { const t = performance.now();"
                " document.querySelectorAll('.task-item')[500 % document.querySelectorAll("
                "'.task-item').length].click();"
                " while (!document.querySelector('#task-pane .open-rollout'))"
                "   await new Promise(r => setTimeout(r, 5));"
                " const t1 = performance.now();"
                " document.querySelector('.open-rollout').click();"
                " while (!document.querySelector('#rollout-pane').dataset.rollout)"
                "   await new Promise(r => setTimeout(r, 5));"
                " return [t1 - t, performance.now() - t1]; })()",
                timeout=120,
            )
            rows.append(
                {
                    "dom_content_loaded_ms": nav["dom"],
                    "load_event_ms": nav["load"],
                    "open_task_ms": open_ms[0],
                    "open_rollout_ms": open_ms[1],
                }
            )
        errors = page.console_errors()
    if errors:
        sys.exit(f"console errors: {errors}")
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, default=Path(".weft/demo"))
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--loads", type=int, default=3, help="page loads (median reported)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here too")
    parser.add_argument("--keep", type=Path, default=None, help="keep the report HTML here")
    args = parser.parse_args()
    if find_chromium() is None:
        sys.exit("no chromium found (apt-get install -y chromium, or set WEFT_CHROMIUM)")
    with tempfile.TemporaryDirectory(prefix="weft-report-bench-") as tmp:
        run_dir = Path(tmp) / "run"
        t0 = time.perf_counter()
        n_tasks, n_traces = make_corpus(args.source, run_dir, args.tasks)
        corpus_s = time.perf_counter() - t0
        html = args.keep or Path(tmp) / "report.html"
        result: dict[str, Any] = {"tasks": n_tasks, "traces": n_traces, "corpus_s": corpus_s}
        result.update(build(run_dir, html))
        result.update(open_in_chromium(html, args.loads))
    result["goal_load_under_3s"] = result["load_event_ms"] < 3000
    from weft_core.console import summary_table

    summary_table(
        f"weft report: {n_tasks}-task corpus",
        ["measure", "value"],
        [[k, f"{v:.3f}" if isinstance(v, float) else str(v)] for k, v in result.items()],
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
