"""specs -> environments -> atomic tasks -> composed tasks -> rollouts -> verified traces.

Every stage is keyed by the content hash of its inputs (see `weft.stages`), so a rerun skips what
is finished: environments per spec file, atomic-task libraries per bundle, the composed task set,
and rollouts per rollout id inside the rollout stage's JSONL. One MegaMCP host serves every stage
that executes tools (embedded, with its registry and object store under OUT/megamcp so snapshot
URIs stay valid across reruns; or a running host named in the config).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from weft.config import PipelineConfig
from weft.errors import ConfigError, StageError
from weft.stages import StageStore, file_hash
from weft.summary import MCPRow, PipelineSummary, RolloutRow
from weft_core.console import get_console
from weft_core.models import TaskGraph

ENVS, ATOMIC, COMPOSE, ROLLOUTS, EVOLVE = "envs", "atomic", "compose", "rollouts", "evolve"


def _log(message: str) -> None:
    get_console().print(message)


@asynccontextmanager
async def megamcp_session(config: PipelineConfig) -> AsyncIterator[Any]:
    from weft_megamcp.client import MegaMCPClient
    from weft_megamcp.host import MegaMCPHost
    from weft_megamcp.settings import MegaMCPSettings

    if config.megamcp.url:
        async with MegaMCPClient(config.megamcp.url, config.megamcp.admin_token) as client:
            yield client
        return
    settings = MegaMCPSettings(data_dir=config.out_dir / "megamcp", log_level="warning")
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        yield client


# ----------------------------------------------------------------------------- stage 1


def _synth_one(spec: str, folder: str, model: str | None, rounds: int) -> dict[str, Any]:
    from weft_envsynth.pipeline import synthesize_file

    return synthesize_file(spec, folder, model=model, rounds=rounds).model_dump(mode="json")


async def stage_envs(
    config: PipelineConfig, store: StageStore, model: str | None
) -> tuple[list[dict[str, Any]], str]:
    """One EnvBundle per spec file; returns the synthesis results (with bundle paths)."""
    specs = config.spec_files()
    results: list[dict[str, Any] | None] = [None] * len(specs)
    todo: list[tuple[int, Path, str]] = []
    for i, spec in enumerate(specs):
        key = store.key(
            ENVS, {"spec": file_hash(spec), "rounds": config.envsynth.rounds, "model": model}
        )
        done = store.done(ENVS, key)
        if done is not None:
            results[i] = done
        else:
            todo.append((i, spec, key))
    if todo:
        from weft_core.console import progress

        loop = asyncio.get_running_loop()
        executor = None
        if config.envsynth.jobs > 1:
            from concurrent.futures import ProcessPoolExecutor

            executor = ProcessPoolExecutor(max_workers=config.envsynth.jobs)
        try:
            # Synthesis (alembic) is not thread-safe: one spec per worker process, and with
            # jobs=1 one spec at a time in a helper thread.
            sem = asyncio.Semaphore(config.envsynth.jobs)
            bar: Any
            with progress(total=len(todo), description="environments") as bar:

                async def one(i: int, spec: Path, key: str) -> None:
                    folder = store.begin(ENVS, key)
                    async with sem:
                        rec = await loop.run_in_executor(
                            executor,
                            _synth_one,
                            str(spec),
                            str(folder),
                            model,
                            config.envsynth.rounds,
                        )
                    results[i] = store.finish(ENVS, key, rec)
                    bar.advance()

                await asyncio.gather(*(one(i, s, k) for i, s, k in todo))
        finally:
            if executor:
                executor.shutdown()
    state = "ran" if todo else "cached"
    if todo and len(todo) < len(specs):
        state = f"ran {len(todo)}, cached {len(specs) - len(todo)}"
    return [r for r in results if r is not None], state


# ----------------------------------------------------------------------------- stage 2


async def stage_atomic(
    config: PipelineConfig,
    store: StageStore,
    client: Any,
    bundles: list[Path],
    llm: Any,
    model: str | None,
) -> tuple[list[Path], dict[str, dict[str, Any]], str]:
    """A certified atomic-task library per bundle (Algorithm 1 through MegaMCP). A bundle with
    no certifiable task is recorded with its reason and the others go on."""
    from weft_tasks.atomic import certify_bundle
    from weft_tasks.exceptions import TasksUserError
    from weft_tasks.settings import TasksSettings

    settings = TasksSettings(
        round_budget=config.tasks.budget,
        seed=config.pipeline.seed,
        concurrency=config.rollouts.concurrency,
    )
    libraries: list[Path] = []
    stats: dict[str, dict[str, Any]] = {}
    ran = 0
    for bundle_dir in bundles:
        manifest = json.loads((bundle_dir / "manifest.json").read_text(encoding="utf-8"))
        key = store.key(
            ATOMIC,
            {
                "bundle": manifest.get("content_hash") or file_hash(bundle_dir / "manifest.json"),
                "budget": config.tasks.budget,
                "model": model,
                "seed": config.pipeline.seed,
            },
        )
        done = store.done(ATOMIC, key)
        if done is None:
            ran += 1
            folder = store.begin(ATOMIC, key)
            try:
                lib = await certify_bundle(bundle_dir, client, folder, llm=llm, settings=settings)
                record = {
                    "mcp": lib.mcp,
                    "library": str(folder / lib.mcp),
                    "tasks": len(lib.tasks),
                    "coverage": float(lib.manifest.coverage),
                }
            except TasksUserError as exc:  # no certifiable task / unusable bundle: this MCP only
                record = {
                    "mcp": manifest.get("name", bundle_dir.name),
                    "library": None,
                    "tasks": 0,
                    "coverage": 0.0,
                    "error": str(exc),
                }
            done = store.finish(ATOMIC, key, record)
        if done.get("library"):
            libraries.append(Path(done["library"]))
        stats[done["mcp"]] = done
    return libraries, stats, ("ran" if ran else "cached")


# ----------------------------------------------------------------------------- stage 3


async def stage_compose(
    config: PipelineConfig,
    store: StageStore,
    client: Any,
    libraries: list[Path],
    llm: Any,
    model: str | None,
) -> tuple[list[TaskGraph], list[str], str]:
    """Composed, grounded task graphs (weft_tasks.compose + grounding), saved as JSON files."""
    key = store.key(
        COMPOSE,
        {
            "libraries": sorted(
                file_hash(p / "library.json") if (p / "library.json").exists() else str(p)
                for p in libraries
            ),
            "tasks": config.tasks.model_dump(mode="json"),
            "model": model,
            "seed": config.pipeline.seed,
        },
    )
    done = store.done(COMPOSE, key)
    folder = store.path(COMPOSE, key)
    if done is None:
        folder = store.begin(COMPOSE, key)
        graphs, failures = await _compose(config, client, libraries, llm, folder)
        for g in graphs:
            # Re-validate: a graph assembled with model_copy(update=...) may hold raw dicts that
            # dump differently once loaded, and its stored hash would then not verify.
            clean = TaskGraph.model_validate_json(
                g.model_copy(update={"content_hash": None}).model_dump_json()
            )
            clean.save(folder / "tasks" / f"{g.id}.json")
        done = store.finish(COMPOSE, key, {"tasks": [g.id for g in graphs], "failures": failures})
        state = "ran"
    else:
        state = "cached"
    graphs = [TaskGraph.load(folder / "tasks" / f"{tid}.json") for tid in done["tasks"]]
    return graphs, list(done.get("failures", [])), state


def profile_set(config: PipelineConfig) -> Any:
    """The composition profiles: a profiles file, a subset of the defaults by name, or all defaults."""
    from weft_tasks.compose.profiles import DEFAULT_PROFILES, ProfileSet, load_profiles

    if config.tasks.profiles_file:
        return load_profiles(config.base_dir / config.tasks.profiles_file)
    if not config.tasks.profiles:
        return DEFAULT_PROFILES
    known = {p.name: p for p in DEFAULT_PROFILES.profiles}
    unknown = [n for n in config.tasks.profiles if n not in known]
    if unknown:
        raise ConfigError(f"[tasks].profiles: unknown profile(s) {unknown}; known: {sorted(known)}")
    return ProfileSet(profiles=[known[n] for n in config.tasks.profiles])


async def _compose(
    config: PipelineConfig, client: Any, libraries: list[Path], llm: Any, workdir: Path
) -> tuple[list[TaskGraph], list[str]]:
    from weft_tasks.atomic.library import load_mcp_library
    from weft_tasks.compose.pipeline import compose_tasks
    from weft_tasks.settings import TasksSettings

    libs = [load_mcp_library(p) for p in libraries]
    settings = TasksSettings(seed=config.pipeline.seed, concurrency=config.rollouts.concurrency)
    graphs, report = await compose_tasks(
        libs,
        client,
        workdir,
        config.tasks.n_tasks,
        profiles=profile_set(config),
        llm=llm,
        settings=settings,
    )
    failures = [f"{reason}: {n}" for reason, n in sorted(report.rejections.items())]
    return list(graphs), failures


# ----------------------------------------------------------------------------- stage 4


def build_harnesses(config: PipelineConfig, llm: Any) -> dict[str, Any]:
    from weft_tasks.harness import (
        ReActHarness,
        ReferenceChainTeacher,
        SubprocessHarness,
        reference_policy,
    )

    harnesses: dict[str, Any] = {}
    external = {h.name: h for h in config.rollouts.external}
    for name in config.rollouts.harnesses:
        if name == "teacher":
            harnesses[name] = ReferenceChainTeacher()
        elif name == "react":
            harnesses[name] = ReActHarness(llm if llm is not None else reference_policy)
        elif name in external:
            h = external[name]
            harnesses[name] = SubprocessHarness(
                name, h.command, modes=frozenset(h.modes), env=h.env
            )
        else:
            raise ConfigError(
                f"[rollouts].harnesses: unknown harness {name!r} (use 'teacher', 'react' or an [[rollouts.external]] name)"
            )
    return harnesses


async def stage_rollouts(
    config: PipelineConfig,
    store: StageStore,
    client: Any,
    graphs: list[TaskGraph],
    llm: Any,
    model: str | None,
) -> tuple[list[Any], Path, str]:
    from weft_tasks.rollout import RolloutSettings, plan_rollouts, run_rollouts

    harnesses = build_harnesses(config, llm)
    key = store.key(
        ROLLOUTS,
        {
            "tasks": sorted(g.content_hash or g.compute_hash() for g in graphs),
            "rollouts": config.rollouts.model_dump(mode="json"),
            "model": model,
        },
    )
    done = store.done(ROLLOUTS, key)
    folder = store.begin(ROLLOUTS, key, keep=True)
    out = folder / "traces.jsonl"
    plans = plan_rollouts(
        graphs,
        config.rollouts.view_pairs(),
        list(harnesses),
        samples=config.rollouts.samples,
        models={n: h.model_name for n, h in harnesses.items()},
        harness_modes={n: h.modes for n, h in harnesses.items()},
    )
    settings = RolloutSettings(
        concurrency=config.rollouts.concurrency,
        max_infra_retries=config.rollouts.max_infra_retries,
        progress=not get_console().quiet,
    )
    simulator = llm if config.rollouts.simulator == "llm" else None
    report = await run_rollouts(
        plans, client, harnesses, out=out, settings=settings, simulator_model=simulator
    )
    store.finish(ROLLOUTS, key, {"traces": str(out), "rollouts": len(report.traces)})
    state = (
        "cached"
        if done is not None or report.skipped == len(plans)
        else ("ran" if report.skipped == 0 else f"resumed ({report.skipped} done before)")
    )
    return report.traces, out, state


# ----------------------------------------------------------------------------- stage 5


async def stage_evolve(
    config: PipelineConfig,
    store: StageStore,
    client: Any,
    graphs: list[TaskGraph],
    bundles: list[Path],
    llm: Any,
    model: str | None,
) -> str:
    """`[evolve] rounds = N` evolution rounds (weft-evolve) on copies of the bundles and tasks,
    so the earlier stages' outputs (and their cache keys) never change; resumable per round."""
    import shutil

    from weft_evolve import EvolveSettings, EvolveWorld, evolve, print_report, write_report

    key = store.key(
        EVOLVE,
        {
            "tasks": sorted(g.content_hash or g.compute_hash() for g in graphs),
            "bundles": sorted(file_hash(b / "manifest.json") for b in bundles),
            "evolve": config.evolve.model_dump(mode="json"),
            "rollouts": config.rollouts.model_dump(mode="json"),
            "model": model,
        },
    )
    done = store.done(EVOLVE, key)
    folder = store.begin(EVOLVE, key, keep=True)
    envs = folder / "envs"
    for b in bundles:
        if not (envs / b.name / "manifest.json").exists():
            shutil.copytree(b, envs / b.name, ignore=shutil.ignore_patterns("__pycache__"))
    copies = {p.parent.name: p.parent for p in sorted(envs.glob("*/manifest.json"))}
    for b in copies.values():
        await client.register(b)
    views = (
        config.rollouts.view_pairs()
        if not config.evolve.views
        else config.rollouts.model_copy(update={"views": config.evolve.views}).view_pairs()
    )
    world = EvolveWorld(
        client=client,
        bundles=copies,
        harnesses=build_harnesses(config, llm),
        views=list(views),
        out=folder,
        settings=EvolveSettings(
            rounds=config.evolve.rounds,
            concurrency=config.rollouts.concurrency,
            samples=config.rollouts.samples,
        ),
        llm=llm,
    )
    records = await evolve({g.id: g for g in graphs}, world, config.evolve.rounds)
    print_report(records)
    write_report(records, folder)
    store.finish(
        EVOLVE, key, {"rounds": len(records), "report": str(folder / "evolve-report.html")}
    )
    return "cached" if done is not None else "ran"


# ----------------------------------------------------------------------------- all


async def probe_model(llm: Any, model: str) -> None:
    """One tiny call before any stage, so an unreachable or misnamed endpoint stops the run
    with its reason at once instead of failing every LLM step later."""
    try:
        await asyncio.wait_for(llm.ainvoke("Reply with OK."), timeout=120)
    except Exception as exc:
        raise StageError(f"model {model!r} did not answer: {type(exc).__name__}: {exc}") from None


async def run_pipeline(config: PipelineConfig, *, model: str | None = None) -> PipelineSummary:
    """Run every stage; returns (and writes OUT/summary.json) the summary."""
    from weft_core.llm import make_chat_model
    from weft_tasks.rollout import INFRA_PREFIX, rollout_stats, trace_ledger_problems

    t0 = time.perf_counter()
    model = (model if model is not None else config.pipeline.model) or None
    llm = make_chat_model(model) if model else None
    if llm is not None:
        await probe_model(llm, model or "")
    out = config.out_dir
    out.mkdir(parents=True, exist_ok=True)
    store = StageStore(out / "stages")
    summary = PipelineSummary(out_dir=str(out), model=model or "programmatic")

    _log(f"[bold]1/4 environments[/] from {len(config.spec_files())} spec file(s)")
    envs, summary.stages[ENVS] = await stage_envs(config, store, model)
    bundles = [
        Path(r["bundle"])
        for r in envs
        if r.get("status") in ("certified", "partial") and r.get("bundle")
    ]
    rows = {
        r.get("slug") or r.get("name") or r["source"]: MCPRow(
            name=r.get("slug") or r.get("name") or Path(r["source"]).stem,
            source=Path(r["source"]).name,
            status=r["status"],
            tools_certified=r.get("tools_certified", 0),
            tools_total=r.get("tools_total", 0),
            reason=r.get("reason"),
        )
        for r in envs
    }
    summary.mcps = list(rows.values())
    if not bundles:
        reasons = "; ".join(f"{m.source}: {m.reason or m.status}" for m in summary.mcps[:3])
        more = f" (+{len(summary.mcps) - 3} more)" if len(summary.mcps) > 3 else ""
        raise StageError(f"no environment could be certified: {reasons}{more}")

    async with megamcp_session(config) as client:
        for b in bundles:
            await client.register(b)
        _log(f"[bold]2/4 atomic tasks[/] on {len(bundles)} environment(s)")
        libraries, atomic, summary.stages[ATOMIC] = await stage_atomic(
            config, store, client, bundles, llm, model
        )
        for mcp, st in atomic.items():
            row = rows.get(mcp) or next((r for r in summary.mcps if r.name == mcp), None)
            if row is not None:
                row.atomic_tasks, row.coverage = int(st["tasks"]), float(st["coverage"])
                row.reason = st.get("error") or row.reason
        _log("[bold]3/4 composed tasks[/]")
        graphs, summary.composition_failures, summary.stages[COMPOSE] = await stage_compose(
            config, store, client, libraries, llm, model
        )
        summary.tasks_by_profile = dict(Counter(g.profile for g in graphs))
        if not graphs:
            raise StageError(
                "composition produced no task; see composition failures in summary.json"
            )
        _log(f"[bold]4/4 rollouts[/] of {len(graphs)} task(s)")
        traces, traces_path, summary.stages[ROLLOUTS] = await stage_rollouts(
            config, store, client, graphs, llm, model
        )
        if config.evolve.rounds:
            _log(f"[bold]evolve[/]: {config.evolve.rounds} round(s) on {len(graphs)} task(s)")
            summary.stages[EVOLVE] = await stage_evolve(
                config, store, client, graphs, bundles, llm, model
            )

    summary.traces_path = str(traces_path)
    summary.traces = len(traces)
    for t in traces:
        if (t.error or "").startswith(INFRA_PREFIX):
            continue
        problems = trace_ledger_problems(t.messages, t.ledger)
        if t.final is not None and not problems:
            summary.traces_verified += 1
        summary.trace_problems += [f"{t.id}: {p}" for p in problems]
        if t.error:
            summary.trace_problems.append(f"{t.id}: {t.error}")
    summary.rollouts = [
        RolloutRow(
            view=c.view,
            harness=c.harness,
            rollouts=c.rollouts,
            checkpoint_pass_rate=c.checkpoint_pass_rate,
            task_success_rate=c.task_success_rate,
            tool_error_rate=c.tool_error_rate,
            infrastructure_failed=c.infrastructure_failed,
            infrastructure_retries=c.infrastructure_retries,
        )
        for c in rollout_stats(traces)
    ]
    summary.seconds = time.perf_counter() - t0
    from weft_core.models import atomic_write_text

    atomic_write_text(out / "summary.json", summary.model_dump_json(indent=2))
    return summary
