from __future__ import annotations

import math
from collections import Counter
from typing import Any

from weft_tasks.compose.profiles import Profile, Span
from weft_tasks.compose.sampler import CoverageSampler


def _two_mcp() -> Profile:
    return Profile(
        name="Pair",
        tasks=Span(min=2, max=3),
        mcps=Span(min=2, max=2),
        domains=Span(min=2, max=2),
        proportion=1,
    )


def test_sampling_favours_underrepresented_mcps(libraries: list[Any]) -> None:
    sampler = CoverageSampler(libraries, surplus=0.5, seed=3)
    sampler.usage_mcp["crm"] = 50  # crm has been used far beyond its capacity already
    shape = sampler.shape(_two_mcp())
    assert shape is not None
    best = sampler.candidates(shape)[0]
    assert "crm" not in best.mcps
    # over many accepted draws, usage relative to capacity evens out
    sampler = CoverageSampler(libraries, surplus=0.5, seed=4)
    for _ in range(60):
        shape = sampler.shape(_two_mcp())
        combo = sampler.candidates(shape)[0]
        sampler.commit(combo, shape.tasks)
    rates = {m: sampler.mcp_rate(m) for m in sampler.capacity}
    assert min(rates.values()) > 0
    assert max(rates.values()) / min(rates.values()) < 3


def test_ranking_prefers_connected_combinations(libraries: list[Any]) -> None:
    sampler = CoverageSampler(libraries, seed=0)
    shape = sampler.shape(_two_mcp())
    ranked = sampler.candidates(shape)
    connected = [c for c in ranked if c.features["connected"] == 1.0]
    assert connected and ranked[0].features["connected"] == 1.0
    crm_billing = next(c for c in ranked if c.mcps == ["billing", "crm"])
    assert crm_billing.features["shared_entities"] == 1.0


def test_draw_reserves_surplus_and_spreads_over_mcps(libraries: list[Any]) -> None:
    sampler = CoverageSampler(libraries, surplus=0.5, seed=1)
    combo = next(
        c for c in sampler.candidates(sampler.shape(_two_mcp())) if c.features["surplus"] == 1.0
    )
    pool = sampler.draw(combo, 2)
    assert len(pool) == math.ceil(2 * 1.5)
    assert {t.mcp for t in pool} == set(combo.mcps)
    sampler.record(pool)
    again = sampler.draw(combo, 2)
    # least-used tasks come first: the second draw prefers tasks the first did not use
    assert len({t.id for t in again} - {t.id for t in pool}) >= 1


def test_commit_charges_usage_before_drawing(libraries: list[Any]) -> None:
    sampler = CoverageSampler(libraries, seed=2)
    combo = sampler.candidates(sampler.shape(_two_mcp()))[0]
    sampler.commit(combo, 5)
    charged = Counter({m: sampler.usage_mcp[m] for m in combo.mcps})
    assert sum(charged.values()) == 5 and all(v >= 1 for v in charged.values())
    assert sum(sampler.usage_domain.values()) == 5


def test_infeasible_profile_has_no_shape(libraries: list[Any]) -> None:
    sampler = CoverageSampler(libraries)
    wide = Profile(
        name="Wide",
        tasks=Span(min=9, max=9),
        mcps=Span(min=9, max=9),
        domains=Span(min=9, max=9),
        proportion=1,
    )
    assert sampler.shape(wide) is None
