"""The round report: JSON, a rich table, and an HTML page with matplotlib plots — per round the
tool-error rate in selected trajectories (and in all rollouts), failures by attribution,
revisions by component and components that failed revalidation."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any

from weft_core.console import summary_table
from weft_core.models import atomic_write_text
from weft_evolve.models import RoundRecord

COMPONENTS = ["policy", "environment", "task", "verifier", "infrastructure"]


def report_rows(records: list[RoundRecord]) -> list[dict[str, Any]]:
    rows = []
    for r in records:
        s = r.stats
        rows.append(
            {
                "round": s.round,
                "rollouts": s.rollouts,
                "tool_error_rate_selected": round(s.selected_tool_error_rate, 4),
                "tool_error_rate_all": round(s.tool_error_rate, 4),
                "failed_checkpoints": s.failed_checkpoints,
                "checkpoints": s.checkpoints,
                **{f"attr_{c}": s.attributions.get(c, 0) for c in COMPONENTS},
                **{f"rev_{c}": s.revisions.get(c, 0) for c in ("environment", "task", "verifier")},
                "failed_revalidations": s.failed_revalidations,
                "seconds": round(s.seconds, 1),
            }
        )
    return rows


def print_report(records: list[RoundRecord]) -> None:
    rows = report_rows(records)
    summary_table(
        "Evolution rounds",
        [
            "round",
            "rollouts",
            "tool err (selected)",
            "tool err (all)",
            "failed ckpts",
            "policy",
            "env",
            "task",
            "verifier",
            "revised env/task/ver",
            "failed reval",
        ],
        [
            [
                r["round"],
                r["rollouts"],
                f"{r['tool_error_rate_selected']:.2%}",
                f"{r['tool_error_rate_all']:.2%}",
                f"{r['failed_checkpoints']}/{r['checkpoints']}",
                r["attr_policy"],
                r["attr_environment"],
                r["attr_task"],
                r["attr_verifier"],
                f"{r['rev_environment']}/{r['rev_task']}/{r['rev_verifier']}",
                r["failed_revalidations"],
            ]
            for r in rows
        ],
    )


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def _plots(records: list[RoundRecord]) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rounds = [r.round for r in records]
    out: list[tuple[str, str]] = []
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(
        rounds,
        [100 * r.stats.selected_tool_error_rate for r in records],
        marker="o",
        label="selected trajectories",
    )
    ax.plot(
        rounds,
        [100 * r.stats.tool_error_rate for r in records],
        marker="s",
        linestyle="--",
        label="all rollouts",
    )
    ax.set_xlabel("round")
    ax.set_ylabel("tool-error rate (%)")
    ax.set_xticks(rounds)
    ax.legend()
    ax.set_title("Tool-error rate")
    out.append(("Tool-error rate per round", _png(fig)))
    plt.close(fig)
    for title, key, comps in (
        ("Failures by attribution", "attributions", COMPONENTS),
        ("Revisions by component", "revisions", ["environment", "task", "verifier"]),
    ):
        fig, ax = plt.subplots(figsize=(5, 3))
        bottom = [0] * len(records)
        for c in comps:
            vals = [getattr(r.stats, key).get(c, 0) for r in records]
            ax.bar(rounds, vals, bottom=bottom, label=c)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        ax.set_xlabel("round")
        ax.set_xticks(rounds)
        ax.set_title(title)
        ax.legend(fontsize=7)
        out.append((title, _png(fig)))
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(rounds, [r.stats.failed_revalidations for r in records], color="tab:red")
    ax.set_xlabel("round")
    ax.set_xticks(rounds)
    ax.set_title("Components that failed revalidation")
    out.append(("Failed revalidations", _png(fig)))
    plt.close(fig)
    return out


def write_report(
    records: list[RoundRecord], folder: Path, *, extra: dict[str, Any] | None = None
) -> tuple[Path, Path]:
    """OUT/evolve-report.json and OUT/evolve-report.html; returns both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {"rounds": report_rows(records), **(extra or {})}
    jpath = atomic_write_text(
        folder / "evolve-report.json", json.dumps(data, indent=2, default=str)
    )
    rows = report_rows(records)
    head = "".join(f"<th>{html.escape(k)}</th>" for k in (rows[0] if rows else {}))
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r.values()) + "</tr>"
        for r in rows
    )
    figs = (
        "".join(
            f'<figure><img src="data:image/png;base64,{b64}" alt="{html.escape(t)}"><figcaption>{html.escape(t)}</figcaption></figure>'
            for t, b64 in _plots(records)
        )
        if records
        else ""
    )
    revs = "".join(
        f"<li>round {r.round}: <b>{html.escape(v.component.value)}</b> {html.escape(v.target_key)} "
        f"({html.escape(v.fix.value)}) {'revalidated' if v.revalidated else 'FAILED: ' + html.escape(v.error or '')}"
        f" — {html.escape('; '.join(v.changed)[:200])}</li>"
        for r in records
        for v in r.revisions
    )
    extra_html = ""
    if extra:
        extra_html = (
            "<h2>Benchmark figures</h2><pre>"
            + html.escape(json.dumps(extra, indent=1, default=str)[:6000])
            + "</pre>"
        )
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>Weft evolution report</title>
<style>body{{font-family:sans-serif;margin:24px}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 6px;font-size:12px}}
figure{{display:inline-block;margin:8px}}img{{max-width:460px}}li{{font-size:12px}}</style></head><body>
<h1>Weft evolution rounds</h1><table><tr>{head}</tr>{body}</table>
<h2>Plots</h2>{figs}<h2>Revisions</h2><ul>{revs}</ul>{extra_html}</body></html>"""
    hpath = atomic_write_text(folder / "evolve-report.html", page)
    return jpath, hpath
