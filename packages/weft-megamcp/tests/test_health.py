"""Health thresholds, hysteresis, placement and migration planning."""

from __future__ import annotations

from pathlib import Path

import pytest

from weft_megamcp.health import (
    HealthMonitor,
    HealthSample,
    HealthThresholds,
    NoPlacementError,
    PlacementPolicy,
    WorkerState,
    evaluate_health,
    sample_health,
)

GiB = 1 << 30


def sample(
    disk_free: int = 50 * GiB, mem_avail: int = 8 * GiB, mem_pct: float = 40.0, rss: int = 0
) -> HealthSample:
    return HealthSample(
        disk_free_bytes=disk_free,
        disk_total_bytes=100 * GiB,
        memory_available_bytes=mem_avail,
        memory_percent=mem_pct,
        process_rss_bytes=rss,
    )


def test_real_sample_of_this_machine(tmp_path: Path) -> None:
    s = sample_health(tmp_path / "not" / "yet" / "created", pid=None)
    assert 0 < s.disk_free_bytes <= s.disk_total_bytes
    assert s.memory_available_bytes > 0
    import os

    assert sample_health(tmp_path, pid=os.getpid()).process_rss_bytes > 0


@pytest.mark.parametrize(
    ("s", "needle"),
    [
        (sample(disk_free=GiB // 2), "disk free 512 MiB"),
        (sample(disk_free=3 * GiB), "disk free 3.0%"),
        (sample(mem_avail=100 << 20), "memory available 100 MiB"),
        (sample(mem_pct=97.5), "memory used 97.5%"),
        (sample(rss=3 * GiB), "worker RSS 3072 MiB"),
    ],
)
def test_each_threshold(s: HealthSample, needle: str) -> None:
    t = HealthThresholds(max_process_rss_bytes=2 * GiB)
    status = evaluate_health(s, t)
    assert not status.healthy
    assert any(needle in r for r in status.reasons), status.reasons
    assert evaluate_health(sample(), t).healthy


def test_thresholds_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEFT_MEGAMCP_HEALTH_MAX_MEMORY_PERCENT", "50")
    assert not evaluate_health(sample(mem_pct=60), HealthThresholds()).healthy


def test_monitor_hysteresis() -> None:
    feed = [
        sample(),
        sample(mem_pct=99),
        sample(),
        sample(),
        sample(mem_pct=99),
        sample(),
        sample(),
        sample(),
    ]
    monitor = HealthMonitor("/", HealthThresholds(recover_after=3), sampler=lambda: feed.pop(0))
    seen = [monitor.check().healthy for _ in range(8)]
    assert seen == [True, False, False, False, False, False, False, True]
    assert monitor.reasons == []


def test_unhealthy_worker_takes_no_placements() -> None:
    policy = PlacementPolicy(caps={"leaky@1": 1}, default_cap=10)
    a = WorkerState(worker_id="a")
    b = WorkerState(worker_id="b", healthy=False)
    workers = [a, b]
    for i in range(5):
        assert policy.place(f"s{i}", "notes@1", workers) == "a"
    # cap 1 per process for a dedicated-class MCP
    assert policy.place("x1", "leaky@1", workers) == "a"
    with pytest.raises(NoPlacementError, match="leaky@1"):
        policy.place("x2", "leaky@1", workers)
    b.healthy = True
    assert policy.place("x2", "leaky@1", workers) == "b"


def test_placement_prefers_workers_with_the_module_then_least_loaded() -> None:
    policy = PlacementPolicy(default_cap=3)
    a = WorkerState(worker_id="a", sessions={"s1": "notes@1"})
    b = WorkerState(worker_id="b")
    assert policy.place("s2", "notes@1", [a, b]) == "a"  # module already imported on a
    assert policy.place("s3", "notes@1", [a, b]) == "a"
    assert policy.place("s4", "notes@1", [a, b]) == "b"  # a hit the cap of 3
    assert policy.place("t1", "todo@1", [a, b]) == "b"  # least loaded for a new module
    full = WorkerState(worker_id="c", capacity=0)
    with pytest.raises(NoPlacementError):
        policy.place("z", "todo@1", [full])
    draining = WorkerState(worker_id="d", accepting=False)
    with pytest.raises(NoPlacementError):
        policy.place("z", "todo@1", [draining])


def test_a_burst_does_not_herd_onto_the_worker_that_looked_idle() -> None:
    """Both workers sampled at 10 sessions; `a` then received 300 more before the next sample.
    Its stale load (0.5) is still below `b`'s (0.9): by load alone every group went to `a`."""
    policy = PlacementPolicy(default_cap=10_000)
    a = WorkerState(worker_id="a", load=0.5)
    a.sessions = {f"a{i}": "notes@1" for i in range(310)}
    b = WorkerState(worker_id="b", load=0.9)
    b.sessions = {f"b{i}": "notes@1" for i in range(10)}
    placed = [policy.place(f"n{i}", "notes@1", [a, b]) for i in range(100)]
    assert placed.count("b") == 100


def test_a_new_worker_fills_to_a_fair_share() -> None:
    """A worker forked during a burst takes new groups until it holds as many as the others,
    then they alternate (within BALANCE_SLACK)."""
    policy = PlacementPolicy(default_cap=10_000)
    old = WorkerState(worker_id="old", load=1.0)
    old.sessions = {f"o{i}": "notes@1" for i in range(100)}
    new = WorkerState(worker_id="new", sessions={"first": "notes@1"})  # placed when forked
    placed = [policy.place(f"n{i}", "notes@1", [old, new]) for i in range(150)]
    assert placed[:99] == ["new"] * 99  # until it holds as many as `old`
    assert abs(len(new.sessions) - len(old.sessions)) <= 8


def test_an_idle_pool_spreads_a_burst_over_every_worker() -> None:
    """After a burst closes, both workers are empty: the next burst must not all go to the
    one that happened to take its first group (it hosts the MCP, the other does not)."""
    policy = PlacementPolicy(default_cap=10_000)
    a, b = WorkerState(worker_id="a"), WorkerState(worker_id="b")
    placed = [policy.place(f"n{i}", "notes@1", [a, b]) for i in range(1000)]
    assert abs(placed.count("a") - placed.count("b")) <= 8


def test_migration_plan_moves_everything_it_can() -> None:
    policy = PlacementPolicy(caps={"solo@1": 1}, default_cap=64)
    sick = WorkerState(
        worker_id="sick",
        healthy=False,
        sessions={"s1": "notes@1", "s2": "notes@1", "s3": "solo@1", "s4": "solo@1"},
    )
    ok1 = WorkerState(worker_id="ok1", capacity=2, sessions={"t": "notes@1"})
    ok2 = WorkerState(worker_id="ok2", capacity=10)
    plan = policy.plan_migrations([sick, ok1, ok2])
    moved = {m.session_id: m.target for m in plan.moves}
    assert moved["s1"] == "ok1"  # ok1 already has notes loaded
    assert moved["s2"] == "ok2"  # ok1 is now full
    # solo has cap 1 per process and ok1 is full: one solo session fits, the other is stranded
    assert moved["s3"] == "ok2"
    assert plan.stranded == ["s4"]
    assert all(m.source == "sick" for m in plan.moves)
    # the plan is computed on copies; the caller's states are unchanged
    assert len(ok2.sessions) == 0 and len(sick.sessions) == 4


def test_migration_with_no_healthy_workers_strands_all() -> None:
    plan = PlacementPolicy().plan_migrations(
        [WorkerState(worker_id="a", healthy=False, sessions={"s": "m@1"})]
    )
    assert plan.moves == [] and plan.stranded == ["s"]
