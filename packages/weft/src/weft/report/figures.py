"""The report's figures, drawn with matplotlib into inline SVG (text kept as text, so the page
stays small and searchable). A figure whose data the run lacks is returned with `missing` set
and no SVG; the page then says "not in this run" and why."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: figures only ever go to SVG

import matplotlib.pyplot as plt
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import MaxNLocator
from pydantic import BaseModel

from weft.report.data import RunData
from weft.report.stats import (
    ErrorRate,
    envs_by_domain,
    rollout_cells,
    task_shape,
    tool_errors,
)

MAX_BARS = 40  # beyond this a bar chart is unreadable; the caption says how many are shown
STATUS_COLORS = {"certified": "#2e7d32", "partial": "#f9a825", "failed": "#c62828"}
POLICY, REFERENCE = "#1565c0", "#9e9e9e"
CONSTRUCTION = "Construction data: no rollout involved, so no reference runs."


class Figure(BaseModel):
    key: str
    title: str
    caption: str
    svg: str | None = None
    missing: str | None = None


def to_svg(fig: MplFigure, key: str) -> str:
    """The figure as an <svg> element with ids unique to `key` (several share one page)."""
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": key}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    svg = text[text.index("<svg") :]
    # matplotlib's ids (clip paths, glyphs) come from content hashes; prefix them with the key
    # so two figures on one page never share one.
    svg = re.sub(r'id="([^"]+)"', rf'id="{key}-\1"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{key}-\1)", svg)
    svg = re.sub(r'xlink:href="#([^"]+)"', rf'xlink:href="#{key}-\1"', svg)
    return svg


def _figure(rows: int = 1, cols: int = 1, height: float = 3.2, width: float = 10.0) -> Any:
    fig, axes = plt.subplots(
        rows, cols, figsize=(width, height), squeeze=False, layout="constrained"
    )
    for ax in axes.flat:
        ax.spines[["top", "right"]].set_visible(False)
    return fig, axes


def _bar_height(n: int) -> float:
    return max(2.2, 0.28 * n + 1.0)


def _shown(n: int, what: str) -> str:
    return f" The {MAX_BARS} largest of {n} {what} are shown." if n > MAX_BARS else ""


def environments(run: RunData) -> Figure:
    f = Figure(
        key="environments",
        title="Environments by domain and status",
        caption="Each synthesized environment (one per spec), by its domain; colour is the "
        "certification status. " + CONSTRUCTION,
    )
    data = envs_by_domain(run)
    if not data:
        f.missing = "no environment stage output (stages/envs)"
        return f
    domains = list(data)[:MAX_BARS][::-1]
    statuses = sorted(
        {s for c in data.values() for s in c}, key=lambda s: (s not in STATUS_COLORS, s)
    )
    fig, axes = _figure(height=_bar_height(len(domains)))
    ax = axes[0][0]
    left = [0] * len(domains)
    for status in statuses:
        vals = [data[d][status] for d in domains]
        ax.barh(domains, vals, left=left, label=status, color=STATUS_COLORS.get(status, "#6d4c41"))
        left = [a + b for a, b in zip(left, vals, strict=True)]
    ax.set_xlabel("environments")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    f.caption += _shown(len(data), "domains")
    f.svg = to_svg(fig, f.key)
    return f


def tools(run: RunData) -> Figure:
    f = Figure(
        key="tools",
        title="Tools certified per MCP",
        caption="Certified tools (dark) out of the tools each MCP's spec defines (light). "
        + CONSTRUCTION,
    )
    rows = sorted(run.envs, key=lambda e: (-e.tools_total, e.name))
    if not rows:
        f.missing = "no environment stage output (stages/envs)"
        return f
    shown = rows[:MAX_BARS][::-1]
    fig, axes = _figure(height=_bar_height(len(shown)))
    ax = axes[0][0]
    names = [e.name for e in shown]
    ax.barh(names, [e.tools_total for e in shown], color="#bbdefb", label="defined")
    ax.barh(names, [e.tools_certified for e in shown], color=POLICY, label="certified")
    ax.set_xlabel("tools")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    total = sum(e.tools_total for e in rows)
    cert = sum(e.tools_certified for e in rows)
    f.caption += f" {cert}/{total} tools certified in all." + _shown(len(rows), "MCPs")
    f.svg = to_svg(fig, f.key)
    return f


def capacity(run: RunData) -> Figure:
    f = Figure(
        key="capacity",
        title="Atomic-task capacity per MCP",
        caption="Certified atomic tasks per MCP (left) and against the MCP's tool count (right): "
        "larger tool inventories should support larger libraries. " + CONSTRUCTION,
    )
    libs = sorted(run.libraries, key=lambda x: (-x.tasks, x.mcp))
    if not libs:
        f.missing = "no atomic-task stage output (stages/atomic)"
        return f
    shown = libs[:MAX_BARS][::-1]
    fig, axes = _figure(1, 2, height=_bar_height(len(shown)))
    ax, sc = axes[0]
    ax.barh([x.mcp for x in shown], [x.tasks for x in shown], color=POLICY)
    ax.set_xlabel("certified atomic tasks")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    domains = sorted({x.domain for x in libs})
    cmap = plt.get_cmap("tab20")
    for i, d in enumerate(domains):
        pts = [x for x in libs if x.domain == d]
        sc.scatter([x.tools for x in pts], [x.tasks for x in pts], label=d, color=cmap(i % 20))
    sc.set_xlabel("tools in the MCP")
    sc.set_ylabel("atomic tasks")
    if len(domains) <= 12:
        sc.legend(frameon=False, fontsize=7)
    failed = [x for x in libs if x.error]
    f.caption += f" {sum(x.tasks for x in libs)} tasks on {len(libs)} MCPs"
    f.caption += f"; {len(failed)} MCP(s) with no certifiable task." if failed else "."
    f.caption += _shown(len(libs), "MCPs")
    f.svg = to_svg(fig, f.key)
    return f


def _hist(ax: Any, values: Sequence[int], xlabel: str, color: str = POLICY) -> None:
    if values:
        lo, hi = min(values), max(values)
        ax.hist(values, bins=[b - 0.5 for b in range(lo, hi + 2)], color=color, rwidth=0.85)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("tasks")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def tasks(run: RunData) -> Figure:
    f = Figure(
        key="tasks",
        title="Composed tasks: profiles, turns, MCPs and domains",
        caption="Composed task graphs by difficulty profile, and the distributions of their "
        "length in atomic-task turns, of the MCPs and of the domains each spans. " + CONSTRUCTION,
    )
    shape = task_shape(run)
    if not shape.by_profile:
        f.missing = "no composed tasks (stages/compose)"
        return f
    fig, axes = _figure(1, 4, height=2.8, width=12.0)
    a, b, c, d = axes[0]
    profiles = list(shape.by_profile)
    a.bar(profiles, [shape.by_profile[p] for p in profiles], color=POLICY)
    a.set_ylabel("tasks")
    a.set_xlabel("profile")
    a.tick_params(axis="x", labelrotation=30)
    cmap = plt.get_cmap("tab10")
    lo = min(min(v) for v in shape.turns.values())
    hi = max(max(v) for v in shape.turns.values())
    b.hist(
        [shape.turns[p] for p in profiles],
        bins=[x - 0.5 for x in range(lo, hi + 2)],
        stacked=True,
        label=profiles,
        color=[cmap(i % 10) for i in range(len(profiles))],
        rwidth=0.85,
    )
    b.set_xlabel("atomic-task turns")
    b.set_ylabel("tasks")
    b.xaxis.set_major_locator(MaxNLocator(integer=True))
    b.yaxis.set_major_locator(MaxNLocator(integer=True))
    b.legend(frameon=False, fontsize=7)
    _hist(c, shape.mcps, "MCPs per task")
    _hist(d, shape.domains, "domains per task")
    turns = sorted(t for v in shape.turns.values() for t in v)
    multi = sum(1 for m in shape.mcps if m > 1)
    f.caption += (
        f" {len(turns)} tasks; median {turns[len(turns) // 2]} turns; "
        f"{multi} span more than one MCP."
    )
    f.svg = to_svg(fig, f.key)
    return f


def rollouts(run: RunData) -> Figure:
    f = Figure(
        key="rollouts",
        title="Rollout pass rates by view × harness × model",
        caption="Checkpoint pass rate (MegaMCP's verifier after each atomic-task turn) and task "
        "success (final verification). Grey, hatched rows marked [reference] are answer-key "
        "runs (the reference-chain teacher, ReAct on the reference policy): they check the "
        "pipeline and are not results.",
    )
    cells = rollout_cells(run)
    if not cells:
        f.missing = "no rollouts (stages/rollouts traces.jsonl)"
        return f
    cells = cells[:MAX_BARS][::-1]
    fig, axes = _figure(height=_bar_height(2 * len(cells)))
    ax = axes[0][0]
    ys = range(len(cells))
    for offset, attr, name in (
        (0.2, "checkpoint_pass_rate", "checkpoint pass rate"),
        (-0.2, "task_success_rate", "task success"),
    ):
        vals = [getattr(c, attr) for c in cells]
        colors = [REFERENCE if c.reference else POLICY for c in cells]
        bars = ax.barh(
            [y + offset for y in ys],
            vals,
            height=0.38,
            color=colors,
            alpha=1.0 if attr == "checkpoint_pass_rate" else 0.55,
            label=name,
        )
        for bar, c in zip(bars, cells, strict=True):
            if c.reference:
                bar.set_hatch("//")
    ax.set_yticks(list(ys), [f"{c.label}  (n={c.rollouts})" for c in cells], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("rate")
    from matplotlib.patches import Patch

    handles = [
        Patch(color=POLICY, label="checkpoint pass rate"),
        Patch(color=POLICY, alpha=0.55, label="task success"),
        Patch(facecolor=REFERENCE, hatch="//", label="reference (answer key)"),
    ]
    ax.legend(
        handles=handles,
        frameon=False,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=3,
        fontsize=8,
    )
    if all(c.reference for c in cells):
        f.caption += " Every rollout of this run is a reference run."
    f.svg = to_svg(fig, f.key)
    return f


def _error_panel(ax: Any, rows: list[ErrorRate], title: str) -> None:
    shown = rows[:MAX_BARS][::-1]
    ys = range(len(shown))
    ax.barh(
        [y + 0.2 for y in ys], [r.rate for r in shown], height=0.38, color=POLICY, label="policy"
    )
    ref = ax.barh(
        [y - 0.2 for y in ys],
        [r.reference_rate for r in shown],
        height=0.38,
        color=REFERENCE,
        label="reference",
    )
    for bar in ref:
        bar.set_hatch("//")
    ax.set_yticks(
        list(ys), [f"{r.name} ({r.calls}+{r.reference_calls})" for r in shown], fontsize=7
    )
    ax.set_xlabel("tool-error rate")
    ax.set_title(title, fontsize=9)
    if not any(r.errors or r.reference_errors for r in rows):
        ax.text(0.5, 0.5, "no tool errors", transform=ax.transAxes, ha="center", color="#6b7785")
    ax.set_xlim(0, max([0.05] + [r.rate for r in shown] + [r.reference_rate for r in shown]) * 1.1)


def tool_error_rates(run: RunData) -> Figure:
    f = Figure(
        key="tool_errors",
        title="Tool-error rate per MCP and per tool",
        caption="Policy tool errors over the calls MegaMCP's ledger recorded (infrastructure "
        "failures excluded); labels give calls as policy+reference. Grey, hatched bars are "
        "reference (answer-key) runs.",
    )
    per_mcp, per_tool = tool_errors(run)
    if not per_mcp:
        f.missing = "no tool calls in the traces"
        return f
    n = min(max(len(per_mcp), len(per_tool)), MAX_BARS)
    fig, axes = _figure(1, 2, height=_bar_height(n), width=12.0)
    _error_panel(axes[0][0], per_mcp, "per MCP")
    _error_panel(axes[0][1], per_tool, "per tool")
    calls = sum(r.calls for r in per_mcp)
    if calls == 0:
        f.caption += " Every tool call of this run came from a reference run."
    f.caption += _shown(len(per_tool), "tools")
    f.svg = to_svg(fig, f.key)
    return f


def evolution(run: RunData) -> Figure:
    f = Figure(
        key="evolution",
        title="Evolution rounds",
        caption="Per self-evolution round (0 = initial construction): tool-error rate of the "
        "selected trajectories, scores, and revisions by component (evolve/rounds.json).",
    )
    rounds = sorted(run.rounds.rounds, key=lambda r: r.round) if run.rounds else []
    if not rounds:
        f.missing = "no evolve/rounds.json"
        return f
    fig, axes = _figure(1, 3, height=3.0, width=12.0)
    a, b, c = axes[0]
    xs = [r.round for r in rounds]
    err = [(r.round, r.tool_error_rate) for r in rounds if r.tool_error_rate is not None]
    if err:
        a.plot([x for x, _ in err], [y for _, y in err], marker="o", color=POLICY)
    a.set_title("tool-error rate", fontsize=9)
    for name in sorted({k for r in rounds for k in r.scores}):
        pts = [(r.round, r.scores[name]) for r in rounds if name in r.scores]
        b.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=name)
    b.set_title("scores", fontsize=9)
    if any(r.scores for r in rounds):
        b.legend(frameon=False, fontsize=7)
    bottom = [0] * len(rounds)
    for comp in sorted({k for r in rounds for k in r.revisions}):
        vals = [r.revisions.get(comp, 0) for r in rounds]
        c.bar(xs, vals, bottom=bottom, label=comp)
        bottom = [p + q for p, q in zip(bottom, vals, strict=True)]
    c.set_title("revisions", fontsize=9)
    if any(r.revisions for r in rounds):
        c.legend(frameon=False, fontsize=7)
    for ax in (a, b, c):
        ax.set_xlabel("round")
        ax.set_xticks(xs)
    ref = [r.round for r in rounds if r.reference]
    if ref:
        f.caption += f" Rounds {ref} were measured on reference (answer-key) runs."
    else:
        f.caption += " No round is marked reference."
    f.svg = to_svg(fig, f.key)
    return f


def training(run: RunData) -> Figure:
    f = Figure(
        key="training",
        title="Training curves",
        caption="Metrics logged per optimizer step by weft-train (train/curves.json); one line "
        "per training run, dashed for reference runs.",
    )
    curves = run.curves
    metrics = curves.metric_names() if curves else []
    if curves is None or not metrics:
        f.missing = "no train/curves.json"
        return f
    fig, axes = _figure(1, len(metrics), height=3.0, width=max(5.0, 4.0 * len(metrics)))
    for ax, metric in zip(axes[0], metrics, strict=True):
        for tr in curves.runs:
            pts = [(p.step, p.metrics()[metric]) for p in tr.points if metric in p.metrics()]
            if pts:
                label = tr.name + (" [reference]" if tr.reference else "")
                ax.plot(
                    [x for x, _ in pts],
                    [y for _, y in pts],
                    label=label,
                    linestyle="--" if tr.reference else "-",
                )
        ax.set_title(metric, fontsize=9)
        ax.set_xlabel("step")
    axes[0][0].legend(frameon=False, fontsize=7)
    refs = [r.name for r in curves.runs if r.reference]
    f.caption += f" Reference runs: {', '.join(refs)}." if refs else " No run is marked reference."
    f.svg = to_svg(fig, f.key)
    return f


FIGURES: list[Callable[[RunData], Figure]] = [
    environments,
    tools,
    capacity,
    tasks,
    rollouts,
    tool_error_rates,
    evolution,
    training,
]


def _safe(make: Callable[[RunData], Figure], run: RunData) -> Figure:
    try:
        return make(run)
    except Exception as exc:  # one figure that cannot be drawn must not cost the report
        plt.close("all")
        return Figure(
            key=make.__name__,
            title=make.__name__.replace("_", " ").capitalize(),
            caption="",
            missing=f"could not be drawn ({type(exc).__name__}: {exc})",
        )


def all_figures(run: RunData) -> list[Figure]:
    return [_safe(make, run) for make in FIGURES]
