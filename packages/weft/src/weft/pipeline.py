"""specs -> environments -> atomic tasks -> composed tasks -> rollouts -> verified traces.

Every stage is keyed by the content hash of its inputs (see `weft.stages`), so a rerun skips what
is finished: environments per spec file, atomic-task libraries per bundle, the composed task set,
and rollouts per rollout id inside the rollout stage's JSONL. One MegaMCP host serves every stage
that executes tools (embedded, with its registry and object store under OUT/megamcp so snapshot
URIs stay valid across reruns; or a running host named in the config).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from weft.config import PipelineConfig
from weft.errors import ConfigError, StageError
from weft.stages import AtomicRecord, ComposeRecord, RolloutsRecord, StageStore, file_hash
from weft.summary import MCPRow, PipelineSummary, RolloutRow
from weft_core.console import get_console
from weft_core.models import EnvBundleManifest, TaskGraph
from weft_envsynth.pipeline import SynthResult, synthesize_file
from weft_megamcp.service import GroupService
from weft_tasks.atomic.megamcp import Registrar

ENVS, ATOMIC, COMPOSE, ROLLOUTS = "envs", "atomic", "compose", "rollouts"


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


def _synth_one(spec: str, folder: str, model: str | None, rounds: int) -> SynthResult:
    return synthesize_file(spec, folder, model=model, rounds=rounds)


async def stage_envs(
    config: PipelineConfig, store: StageStore, model: str | None
) -> tuple[list[SynthResult], str]:
    """One EnvBundle per spec file; returns the synthesis results (with bundle paths)."""
    specs = config.spec_files()
    results: list[SynthResult | None] = [None] * len(specs)
    todo: list[tuple[int, Path, str]] = []
    for i, spec in enumerate(specs):
        key = store.key(
            ENVS, {"spec": file_hash(spec), "rounds": config.envsynth.rounds, "model": model}
        )
        done = store.done(ENVS, key, SynthResult)
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
    client: GroupService,
    bundles: list[Path],
    llm: BaseChatModel | None,
    model: str | None,
    registrar: Registrar,
) -> tuple[list[Path], dict[str, AtomicRecord], str]:
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
    stats: dict[str, AtomicRecord] = {}
    ran = 0
    for bundle_dir in bundles:
        manifest = EnvBundleManifest.load(bundle_dir / "manifest.json")
        key = store.key(
            ATOMIC,
            {
                "bundle": manifest.content_hash or file_hash(bundle_dir / "manifest.json"),
                "budget": config.tasks.budget,
                "model": model,
                "seed": config.pipeline.seed,
            },
        )
        done = store.done(ATOMIC, key, AtomicRecord)
        if done is None:
            ran += 1
            folder = store.begin(ATOMIC, key)
            try:
                lib = await certify_bundle(
                    bundle_dir, client, folder, llm=llm, settings=settings, registrar=registrar
                )
                record = AtomicRecord(
                    mcp=lib.mcp,
                    library=str(folder / lib.mcp),
                    tasks=len(lib.tasks),
                    coverage=float(lib.manifest.coverage),
                )
            except TasksUserError as exc:  # no certifiable task / unusable bundle: this MCP only
                record = AtomicRecord(mcp=manifest.name, error=str(exc))
            done = store.finish(ATOMIC, key, record)
        if done.library:
            libraries.append(Path(done.library))
        stats[done.mcp] = done
    return libraries, stats, ("ran" if ran else "cached")


# ----------------------------------------------------------------------------- stage 3


async def stage_compose(
    config: PipelineConfig,
    store: StageStore,
    client: GroupService,
    libraries: list[Path],
    llm: BaseChatModel | None,
    model: str | None,
    registrar: Registrar,
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
    done = store.done(COMPOSE, key, ComposeRecord)
    folder = store.path(COMPOSE, key)
    if done is None:
        folder = store.begin(COMPOSE, key)
        # The composer saves each sealed graph under folder/tasks/ (weft_tasks.compose).
        graphs, failures = await _compose(config, client, libraries, llm, folder, registrar)
        done = store.finish(
            COMPOSE, key, ComposeRecord(tasks=[g.id for g in graphs], failures=failures)
        )
        state = "ran"
    else:
        state = "cached"
    graphs = [TaskGraph.load(folder / "tasks" / f"{tid}.json") for tid in done.tasks]
    return graphs, list(done.failures), state


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
    config: PipelineConfig,
    client: GroupService,
    libraries: list[Path],
    llm: BaseChatModel | None,
    workdir: Path,
    registrar: Registrar,
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
        registrar=registrar,
    )
    failures = [f"{reason}: {n}" for reason, n in sorted(report.rejections.items())]
    return list(graphs), failures


# ----------------------------------------------------------------------------- stage 4


def build_harnesses(config: PipelineConfig, llm: BaseChatModel | None) -> dict[str, Any]:
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
    client: GroupService,
    graphs: list[TaskGraph],
    llm: BaseChatModel | None,
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
    done = store.done(ROLLOUTS, key, RolloutsRecord)
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
    store.finish(ROLLOUTS, key, RolloutsRecord(traces=str(out), rollouts=len(report.traces)))
    state = (
        "cached"
        if done is not None or report.skipped == len(plans)
        else ("ran" if report.skipped == 0 else f"resumed ({report.skipped} done before)")
    )
    return report.traces, out, state


# ----------------------------------------------------------------------------- all


async def probe_model(llm: BaseChatModel, model: str) -> None:
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
    bundles = [Path(r.bundle) for r in envs if r.status in ("certified", "partial") and r.bundle]
    rows = {
        r.mcp: MCPRow(
            name=r.mcp,
            source=Path(r.source).name,
            status=r.status,
            tools_certified=r.tools_certified,
            tools_total=r.tools_total,
            reason=r.reason,
        )
        for r in envs
    }
    summary.mcps = list(rows.values())
    if not bundles:
        reasons = "; ".join(f"{m.source}: {m.reason or m.status}" for m in summary.mcps[:3])
        more = f" (+{len(summary.mcps) - 3} more)" if len(summary.mcps) > 3 else ""
        raise StageError(f"no environment could be certified: {reasons}{more}")

    async with megamcp_session(config) as client:
        # Registered once here; the atomic and compose stages reuse these MCP ids.
        registrar = Registrar(client)
        for b in bundles:
            await registrar.mcp_id(b)
        _log(f"[bold]2/4 atomic tasks[/] on {len(bundles)} environment(s)")
        libraries, atomic, summary.stages[ATOMIC] = await stage_atomic(
            config, store, client, bundles, llm, model, registrar
        )
        for mcp, st in atomic.items():
            row = rows.get(mcp)
            if row is not None:
                row.atomic_tasks, row.coverage = st.tasks, st.coverage
                row.reason = st.error or row.reason
        _log("[bold]3/4 composed tasks[/]")
        graphs, summary.composition_failures, summary.stages[COMPOSE] = await stage_compose(
            config, store, client, libraries, llm, model, registrar
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
