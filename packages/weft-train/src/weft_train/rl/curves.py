"""Training curves as data (JSON) and PNG plots: reward (App. C.2), entropy, KL, held-out pass rate."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def save_curves(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write the per-step rows as JSON (atomically)."""
    p = Path(path)
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text(json.dumps(list(rows), indent=1, default=float))
    tmp.replace(p)
    return p


def plot_curves(
    path: str | Path,
    runs: Mapping[str, Sequence[Mapping[str, Any]]],
    metrics: Sequence[str] = ("reward", "entropy", "kl", "heldout_pass_rate"),
    *,
    x: str = "rollout_tokens",
) -> Path:
    """One panel per metric, one line per run (label -> rows); rows lacking a metric are skipped."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4), squeeze=False)
    for ax, metric in zip(axes[0], metrics, strict=True):
        for label, rows in runs.items():
            pts = [(r[x], r[metric]) for r in rows if r.get(metric) is not None]
            if pts:
                ax.plot([a for a, _ in pts], [b for _, b in pts], marker=".", label=label)
        ax.set_title(metric)
        ax.set_xlabel(x)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    p = Path(path)
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p
