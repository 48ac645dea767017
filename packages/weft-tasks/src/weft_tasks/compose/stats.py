"""Corpus statistics: per profile (tasks, median atomic-task turns, MCPs and domains per task)
and coverage per MCP and domain, as a table and as JSON."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from statistics import median

from pydantic import BaseModel, Field

from weft_core.models import TaskGraph
from weft_tasks.atomic.library import MCPLibrary


class ProfileStats(BaseModel):
    profile: str
    quota: int
    tasks: int
    target_share: float
    share: float
    median_turns: float = Field(description="Median atomic tasks (turns) per composed task.")
    median_mcps: float
    median_domains: float


class MCPCoverage(BaseModel):
    mcp: str
    domain: str
    composed_tasks: int = Field(description="Composed tasks that use this MCP.")
    atomic_used: int = Field(description="Distinct atomic tasks of the library used at least once.")
    atomic_total: int
    tools_used: int
    tools_total: int


class CorpusStats(BaseModel):
    profiles: list[ProfileStats]
    mcps: list[MCPCoverage]
    domains: dict[str, int] = Field(description="Composed tasks touching each domain.")
    total: int


def corpus_stats(
    graphs: Sequence[TaskGraph],
    libraries: Sequence[MCPLibrary],
    quotas: dict[str, int],
    targets: dict[str, float],
) -> CorpusStats:
    domain_of = {lib.mcp: lib.domain for lib in libraries}
    total = len(graphs)
    profiles = []
    for name, quota in quotas.items():
        mine = [g for g in graphs if g.profile == name]
        profiles.append(
            ProfileStats(
                profile=name,
                quota=quota,
                tasks=len(mine),
                target_share=round(targets.get(name, 0.0), 4),
                share=round(len(mine) / total, 4) if total else 0.0,
                median_turns=median([len(g.nodes) for g in mine]) if mine else 0.0,
                median_mcps=median([len(g.mcps) for g in mine]) if mine else 0.0,
                median_domains=median([len({domain_of.get(m, m) for m in g.mcps}) for g in mine])
                if mine
                else 0.0,
            )
        )
    used_tasks: dict[str, set[str]] = {}
    used_tools: dict[str, set[str]] = {}
    per_mcp: Counter[str] = Counter()
    per_domain: Counter[str] = Counter()
    for g in graphs:
        for m in g.mcps:
            per_mcp[m] += 1
        for d in {domain_of.get(m, m) for m in g.mcps}:
            per_domain[d] += 1
        for n in g.nodes:
            used_tasks.setdefault(n.task.mcp, set()).add(n.task.id)
            used_tools.setdefault(n.task.mcp, set()).update(n.task.tool_chain)
    mcps = [
        MCPCoverage(
            mcp=lib.mcp,
            domain=lib.domain,
            composed_tasks=per_mcp[lib.mcp],
            atomic_used=len(used_tasks.get(lib.mcp, set())),
            atomic_total=len(lib.tasks),
            tools_used=len(used_tools.get(lib.mcp, set()) & set(lib.manifest.tools)),
            tools_total=len(lib.manifest.tools),
        )
        for lib in libraries
    ]
    return CorpusStats(
        profiles=profiles, mcps=mcps, domains=dict(sorted(per_domain.items())), total=total
    )


def show(stats: CorpusStats, rejections: dict[str, int]) -> None:
    """Print the statistics as tables (silent in quiet mode)."""
    from weft_core.console import summary_table

    summary_table(
        "Composed tasks per profile",
        [
            "profile",
            "quota",
            "tasks",
            "share",
            "target",
            "median turns",
            "median MCPs",
            "median domains",
        ],
        [
            [
                p.profile,
                p.quota,
                p.tasks,
                f"{p.share:.1%}",
                f"{p.target_share:.1%}",
                p.median_turns,
                p.median_mcps,
                p.median_domains,
            ]
            for p in stats.profiles
        ],
    )
    summary_table(
        "Coverage per MCP",
        ["mcp", "domain", "composed tasks", "atomic used", "tools used"],
        [
            [
                m.mcp,
                m.domain,
                m.composed_tasks,
                f"{m.atomic_used}/{m.atomic_total}",
                f"{m.tools_used}/{m.tools_total}",
            ]
            for m in stats.mcps
        ],
    )
    if rejections:
        summary_table(
            "Rejections",
            ["reason", "count"],
            [[k, v] for k, v in sorted(rejections.items(), key=lambda x: -x[1])],
        )
