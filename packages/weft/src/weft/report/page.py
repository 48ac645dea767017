"""The report page: overview cards and figures, then the trace viewer, in one HTML file that
needs no network (CSS, JS, SVG and data are all inline)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import Any

from weft.report.data import RunData, is_reference, load_run
from weft.report.figures import Figure, all_figures
from weft.report.viewer import viewer_data


def _asset(name: str) -> str:
    return (files("weft.report") / "assets" / name).read_text(encoding="utf-8")


def _script_json(value: Any) -> str:
    # "</" would end the <script> element early and "<!--" would change how it is parsed;
    # "<\/" and "<\u0021--" are the same JSON strings.
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def _cards(run: RunData) -> str:
    envs = run.envs
    certified = sum(1 for e in envs if e.status == "certified")
    ref = sum(1 for t in run.traces if is_reference(t.model))
    verified = run.summary.traces_verified if run.summary else None
    cards = [
        ("MCPs certified", f"{certified}/{len(envs)}"),
        (
            "tools certified",
            f"{sum(e.tools_certified for e in envs)}/{sum(e.tools_total for e in envs)}",
        ),
        ("atomic tasks", str(sum(x.tasks for x in run.libraries))),
        ("composed tasks", str(len(run.tasks))),
        ("rollouts", f"{len(run.traces)} ({ref} reference)"),
    ]
    if verified is not None:
        cards.append(("traces verified", f"{verified}/{run.summary.traces if run.summary else 0}"))
    return "".join(f'<div class="card"><b>{escape(v)}</b>{escape(k)}</div>' for k, v in cards)


def _notices(run: RunData) -> str:
    out = []
    if run.traces and all(is_reference(t.model) for t in run.traces):
        out.append(
            '<div class="notice ref" id="reference-notice">Every rollout in this run is a '
            "<b>reference</b> run: the policy reads the answer key (reference-chain teacher, "
            "ReAct on the reference policy). Its pass rates check the pipeline; they are not "
            "results.</div>"
        )
    if run.problems:
        items = "".join(f"<li>{escape(p)}</li>" for p in run.problems[:50])
        more = f"<li>… {len(run.problems) - 50} more</li>" if len(run.problems) > 50 else ""
        out.append(
            f'<div class="notice" id="problems">Could not read everything in the run folder:'
            f"<ul>{items}{more}</ul></div>"
        )
    return "".join(out)


def _figure_html(f: Figure) -> str:
    state = "missing" if f.svg is None else "present"
    body = (
        f.svg
        if f.svg is not None
        else f'<p class="missing">Not in this run: {escape(f.missing or "no data")}.</p>'
    )
    return (
        f'<figure class="weft-figure" id="fig-{f.key}" data-figure="{f.key}" '
        f'data-state="{state}"><h2>{escape(f.title)}</h2>{body}'
        f"<figcaption>{escape(f.caption)}</figcaption></figure>"
    )


def render_report(run: RunData) -> str:
    """The report page of `run` as one HTML string."""
    figures = all_figures(run)
    index, blobs = viewer_data(run)
    model = run.summary.model if run.summary else "unknown"
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Weft report: {escape(run.root.name)}</title>
<style>{_asset("report.css")}</style></head>
<body>
<header><h1>Weft run report</h1>
<p class="muted">{escape(str(run.root))} · model: {escape(model)} · generated {generated}</p>
<nav><a href="#overview">Overview</a><a href="#traces">Trace viewer</a></nav></header>
<main>
<section id="overview"><div class="cards">{_cards(run)}</div>{_notices(run)}
{"".join(_figure_html(f) for f in figures)}
</section>
<section id="traces"><h2>Trace viewer</h2>
<p class="muted">Pick a task to see its graph, then open any of its rollouts: the conversation
turn by turn, each checkpoint outcome with the checks that failed, retries and discarded attempts,
and the state each turn changed.</p>
<div id="viewer"><aside><input id="task-filter" type="search" placeholder="filter by id, profile, MCP">
<small id="task-count"></small><div id="task-list"></div></aside>
<div id="task-pane"><p class="muted">No task selected.</p></div></div>
</section></main>
<script type="application/json" id="weft-index">{_script_json(index)}</script>
<script type="application/json" id="weft-blobs">{_script_json(blobs)}</script>
<script>{_asset("viewer.js")}</script>
</body></html>
"""


def build_report(run_dir: Path, out: Path | None = None) -> Path:
    """Write the report of the run folder `run_dir` (default `run_dir/report.html`); returns
    its path. Raises FileNotFoundError when `run_dir` is not a folder."""
    return write_report_of(load_run(run_dir), out)


def write_report_of(run: RunData, out: Path | None = None) -> Path:
    """Write the report of an already loaded run (default `run.root/report.html`)."""
    from weft_core.models import atomic_write_text

    target = out if out is not None else run.root / "report.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, render_report(run))
    return target
