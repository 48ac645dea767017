"""specs -> environments -> atomic tasks -> composed tasks -> rollouts -> verified traces.

Every stage is keyed by the content hash of its inputs (see `weft.stages`), so a rerun skips what
is finished: environments per spec file, atomic-task libraries per bundle, the composed task set,
and rollouts per rollout id inside the rollout stage's JSONL. One MegaMCP host serves every stage
that executes tools (embedded, with its registry and object store under OUT/megamcp so snapshot
URIs stay valid across reruns; or a running host named in the config).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from weft.config import PipelineConfig
from weft.errors import ConfigError, StageError
from weft.harnesses import EXTERNAL, build_harnesses, gateway_upstream
from weft.stages import (
    AtomicRecord,
    ComposeRecord,
    EvolveRecord,
    RolloutsRecord,
    StageStore,
    file_hash,
)
from weft.summary import MCPRow, PipelineSummary, RolloutRow
from weft.toolspace_stage import TOOLSPACE, stage_toolspace
from weft_core.console import get_console
from weft_core.exceptions import WeftError
from weft_core.models import EnvBundleManifest, TaskGraph
from weft_envsynth.pipeline import SynthResult, synthesize_file
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.service import GroupService
from weft_tasks.atomic.megamcp import Registrar

ENVS, ATOMIC, COMPOSE, ROLLOUTS = "envs", "atomic", "compose", "rollouts"
SFT, EVOLVE = "sft", "evolve"
MODEL_CALLS = "model-calls.jsonl"  # every model call of a run, for `weft run --replay`


def _log(message: str) -> None:
    get_console().print(message)


@asynccontextmanager
async def megamcp_session(config: PipelineConfig) -> AsyncIterator[MegaMCPClient]:
    from weft_megamcp.host import MegaMCPHost
    from weft_megamcp.settings import MegaMCPSettings

    if config.megamcp.url:
        async with MegaMCPClient(config.megamcp.url, config.megamcp.admin_token) as client:
            yield client
        return
    # A rollout holds one session group at a time (its episode's, then its replay's), so N
    # rollouts at a time need N places; a screened per-process cap below that would make the
    # extra rollouts queue. The embedded host serves only this run: its cap is sized to it,
    # unless the user set one.
    cap: dict[str, Any] = {}
    if "WEFT_MEGAMCP_SCREEN_LIMITED_CAP" not in os.environ:
        cap["screen_limited_cap"] = max(4, config.rollouts.concurrency)
    if config.toolspace.enabled:
        # The real servers run in the sandbox, which shows a command only its own files: their
        # install folder is bound read-only (as weft_toolspace.pipeline.hosted does).
        from weft_toolspace.settings import ToolSpaceSettings

        cap["sandbox_ro_paths"] = [ToolSpaceSettings().server_home.resolve()]
    settings = MegaMCPSettings(data_dir=config.out_dir / "megamcp", log_level="warning", **cap)
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        yield client


# ----------------------------------------------------------------------------- stage 1


def _synth_one(
    spec: str, folder: str, model: str | None, rounds: int, calls: str | None, replay: bool
) -> SynthResult:
    """One spec in a worker; its model calls are recorded to (or replayed from) `calls`."""
    llm: Any = None
    if model and calls:
        from weft_core.llm import RecordingChatModel, ReplayChatModel, make_chat_model

        inner = None if replay else make_chat_model(model)
        llm = ReplayChatModel(calls) if inner is None else RecordingChatModel(inner, calls)
    return synthesize_file(spec, folder, model=model, rounds=rounds, llm=llm)


async def stage_envs(
    config: PipelineConfig,
    store: StageStore,
    model: str | None,
    calls: Path | None = None,
    replay: bool = False,
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
                            str(calls) if calls else None,
                            replay,
                        )
                    results[i] = store.finish(ENVS, key, _relocatable_synth(rec, config.out_dir))
                    bar.advance()

                await asyncio.gather(*(one(i, s, k) for i, s, k in todo))
        finally:
            if executor:
                executor.shutdown()
    state = "ran" if todo else "cached"
    if todo and len(todo) < len(specs):
        state = f"ran {len(todo)}, cached {len(specs) - len(todo)}"
    return [r for r in results if r is not None], state


def _relocatable_synth(rec: SynthResult, out: Path) -> SynthResult:
    """A synthesis result as a stage record: the bundle as a corpus-relative URI, the spec as
    its file name (it lies outside the corpus, and where it was read from is not content)."""
    from weft_core.models.spec import source_label
    from weft_core.refs import corpus_ref

    update: dict[str, Any] = {"source": source_label(rec.source)}
    if rec.bundle:
        update["bundle"] = corpus_ref(rec.bundle, out)
    return rec.model_copy(update=update)


def record_path(ref: str, out: Path) -> Path:
    """The local path a stage record names: relative to OUT; an absolute path is a record of
    an older run (used as is, so such a run still resumes where it lies)."""
    from weft_core.refs import is_absolute_path, resolve_ref

    return Path(ref) if is_absolute_path(ref) else resolve_ref(ref, out)


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
    from weft_core.refs import corpus_ref
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
                    library=corpus_ref(folder / lib.mcp, config.out_dir),
                    tasks=len(lib.tasks),
                    coverage=float(lib.manifest.coverage),
                )
            except TasksUserError as exc:  # no certifiable task / unusable bundle: this MCP only
                record = AtomicRecord(mcp=manifest.name, error=str(exc))
            done = store.finish(ATOMIC, key, record)
        if done.library:
            libraries.append(record_path(done.library, config.out_dir))
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
    inputs: dict[str, object] = {
        "libraries": sorted(_library_hash(p) for p in libraries),
        "tasks": config.tasks.model_dump(mode="json"),
        "model": model,
        "seed": config.pipeline.seed,
    }
    if config.tasks.witnessed_ranking:  # the evidence's content, not its path, decides the tasks
        inputs["evidence"] = file_hash(evidence_path(config))
    key = store.key(COMPOSE, inputs)
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


def _library_hash(folder: Path) -> str:
    """A library's content hash (not its file's bytes: `created_at` is no input)."""
    from weft_tasks.atomic.library import LibraryManifest

    try:
        return LibraryManifest.load(folder / "library.json").content_hash or ""
    except WeftError as exc:
        raise StageError(f"{folder}: unreadable atomic-task library: {exc}") from None


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


def evidence_path(config: PipelineConfig) -> Path:
    path = config.base_dir / config.tasks.evidence
    if not path.is_file():
        raise ConfigError(f"[tasks].evidence: {config.tasks.evidence!r} is not a file")
    return path


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
    settings = TasksSettings(
        seed=config.pipeline.seed,
        concurrency=config.rollouts.concurrency,
        evidence=evidence_path(config) if config.tasks.witnessed_ranking else None,
        witnessed_ranking=config.tasks.witnessed_ranking,
    )
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


async def stage_rollouts(
    config: PipelineConfig,
    store: StageStore,
    client: GroupService,
    graphs: list[TaskGraph],
    llm: BaseChatModel | None,
    model: str | None,
) -> tuple[list[Any], Path, str]:
    from weft_core.refs import corpus_ref
    from weft_tasks.gateway import CaptureGateway
    from weft_tasks.grounding import restore_snapshots
    from weft_tasks.rollout import RolloutSettings, plan_rollouts, run_rollouts

    simulator = llm if config.rollouts.simulator == "llm" else None
    if config.rollouts.model:
        from weft_core.llm import make_chat_model

        model = config.rollouts.model
        llm = make_chat_model(model)
        if llm is None:
            raise ConfigError(f"[rollouts].model {model!r} names no model")
        await probe_model(llm, model)
    upstream = gateway_upstream(model)
    wants_gateway = upstream is not None and (
        llm is not None or any(h in EXTERNAL for h in config.rollouts.harnesses)
    )
    # The tasks name their initial DBs by content; a host that has not seen them (a fresh data
    # dir, a remote host, a moved corpus) gets them from the corpus' copies.
    await restore_snapshots(
        client,
        graphs,
        sorted(config.out_dir.glob(f"stages/{COMPOSE}/*/snapshots"))
        + sorted(config.out_dir.glob(f"stages/{TOOLSPACE}/*/snapshots")),
    )
    key = store.key(
        ROLLOUTS,
        {
            "tasks": sorted(g.content_hash or g.compute_hash() for g in graphs),
            # concurrency changes how fast, never what: it is no input of the traces
            "rollouts": config.rollouts.model_dump(mode="json", exclude={"concurrency"}),
            "model": model,
        },
    )
    done = store.done(ROLLOUTS, key, RolloutsRecord)
    folder = store.begin(ROLLOUTS, key, keep=True)
    out = folder / "traces.jsonl"
    gateway = (
        CaptureGateway(upstream[0], api_key=upstream[2], capture_dir=folder / "captures")
        if wants_gateway and upstream is not None
        else None
    )
    async with contextlib.AsyncExitStack() as stack:
        if gateway is not None:
            await stack.enter_async_context(gateway.running())
        harnesses = build_harnesses(config, llm, model=model, gateway=gateway)
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
        report = await run_rollouts(
            plans,
            client,
            harnesses,
            out=out,
            settings=settings,
            simulator_model=simulator,
            gateway=gateway,
        )
    store.finish(
        ROLLOUTS,
        key,
        RolloutsRecord(traces=corpus_ref(out, config.out_dir), rollouts=len(report.traces)),
    )
    state = (
        "cached"
        if done is not None or report.skipped == len(plans)
        else ("ran" if report.skipped == 0 else f"resumed ({report.skipped} done before)")
    )
    return report.traces, out, state


# ----------------------------------------------------------------------------- stage 5


async def stage_sft(
    config: PipelineConfig,
    store: StageStore,
    client: GroupService,
    graphs: list[TaskGraph],
    llm: BaseChatModel | None,
    model: str | None,
) -> tuple[dict[str, Any], str]:
    """SFT data by rejection sampling (teacher: the pipeline's model, else the reference policy),
    optionally a fine-tuned policy; resumable per task."""
    from weft_core.models import ViewMode
    from weft_tasks.harness import ReferencePolicyModel
    from weft_train.sft import SamplingConfig
    from weft_train.sft.stage import SFTStageResult, sample_sft_data, train_on_rows

    key = store.key(
        SFT,
        {
            "tasks": sorted(g.content_hash or g.compute_hash() for g in graphs),
            "sft": config.sft.model_dump(mode="json"),
            "model": model,
        },
    )
    done = store.done(SFT, key, SFTStageResult)
    if done is not None:
        return done.model_dump(mode="json"), "cached"
    folder = store.begin(SFT, key, keep=True)
    teacher: Any = llm
    if teacher is None:

        def teacher(g: TaskGraph) -> Any:
            return ReferencePolicyModel(graph=g, mode=ViewMode.SIMUSER)

    sampling = SamplingConfig(
        method=config.sft.method, k=config.sft.k, max_steps_per_turn=config.sft.max_steps_per_turn
    )
    result = await sample_sft_data(
        graphs, client, teacher, folder, sampling, reference_teacher=llm is None
    )
    if config.sft.policy and result.accepted:
        result.trained_model = await asyncio.to_thread(
            train_on_rows,
            Path(result.rows_path),
            config.base_dir / config.sft.policy,
            folder / "policy",
            config.sft.epochs,
            config.sft.lr,
        )
    # Paths in the record are corpus-relative, like every other stage's (the run is relocatable).
    from weft_core.refs import corpus_ref

    result.rows_path = corpus_ref(result.rows_path, config.out_dir)
    if result.trained_model:
        result.trained_model = corpus_ref(result.trained_model, config.out_dir)
    record = store.finish(SFT, key, result).model_dump(mode="json")
    return record, "ran" if result.resumed == 0 else f"resumed ({result.resumed} done before)"


async def stage_evolve(
    config: PipelineConfig,
    store: StageStore,
    client: GroupService,
    graphs: list[TaskGraph],
    bundles: list[Path],
    llm: BaseChatModel | None,
    model: str | None,
) -> str:
    """`[evolve] rounds = N` evolution rounds (weft-evolve) on copies of the bundles and tasks,
    so the earlier stages' outputs (and their cache keys) never change; resumable per round."""
    import shutil

    from weft_core.refs import corpus_ref
    from weft_evolve import EvolveSettings, EvolveWorld, evolve, print_report, write_report

    key = store.key(
        EVOLVE,
        {
            "tasks": sorted(g.content_hash or g.compute_hash() for g in graphs),
            "bundles": sorted(file_hash(b / "manifest.json") for b in bundles),
            "evolve": config.evolve.model_dump(mode="json"),
            "rollouts": config.rollouts.model_dump(mode="json", exclude={"concurrency"}),
            "model": model,
        },
    )
    done = store.done(EVOLVE, key, EvolveRecord)
    folder = store.begin(EVOLVE, key, keep=True)
    envs = folder / "envs"
    for b in bundles:
        if not (envs / b.name / "manifest.json").exists():
            shutil.copytree(b, envs / b.name, ignore=shutil.ignore_patterns("__pycache__"))
    copies = {p.parent.name: p.parent for p in sorted(envs.glob("*/manifest.json"))}
    for b in copies.values():
        await client.register(str(b))
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
        snapshot_roots=[
            config.out_dir / "megamcp",
            *sorted(config.out_dir.glob("stages/compose/*")),
        ],
    )
    records = await evolve({g.id: g for g in graphs}, world, config.evolve.rounds)
    print_report(records)
    write_report(records, folder)
    store.finish(
        EVOLVE,
        key,
        EvolveRecord(
            rounds=len(records),
            report=corpus_ref(folder / "evolve-report.html", config.out_dir),
        ),
    )
    return "cached" if done is not None else "ran"


# ----------------------------------------------------------------------------- all


async def probe_model(llm: BaseChatModel, model: str) -> None:
    """One tiny call before any stage, so an unreachable or misnamed endpoint stops the run
    with its reason at once instead of failing every LLM step later."""
    try:
        await asyncio.wait_for(llm.ainvoke("Reply with OK."), timeout=120)
    except Exception as exc:
        raise StageError(f"model {model!r} did not answer: {type(exc).__name__}: {exc}") from None


async def _environments(
    config: PipelineConfig,
    store: StageStore,
    model: str | None,
    summary: PipelineSummary,
    replay: Path | None,
    out: Path,
) -> list[Path]:
    """Stage 1: the certified EnvBundles of the run's spec files (rows into `summary`)."""
    _log(f"[bold]1/4 environments[/] from {len(config.spec_files())} spec file(s)")
    calls = replay if replay is not None else (out / MODEL_CALLS if model else None)
    envs, summary.stages[ENVS] = await stage_envs(
        config, store, model, calls, replay=replay is not None
    )
    bundles = [
        record_path(r.bundle, out)
        for r in envs
        if r.status in ("certified", "partial") and r.bundle
    ]
    summary.mcps = [
        MCPRow(
            name=r.mcp,
            source=Path(r.source).name,
            status=r.status,
            tools_certified=r.tools_certified,
            tools_total=r.tools_total,
            reason=r.reason,
        )
        for r in envs
    ]
    if not bundles:
        reasons = "; ".join(f"{m.source}: {m.reason or m.status}" for m in summary.mcps[:3])
        more = f" (+{len(summary.mcps) - 3} more)" if len(summary.mcps) > 3 else ""
        raise StageError(f"no environment could be certified: {reasons}{more}")
    return bundles


async def _composed(
    config: PipelineConfig,
    store: StageStore,
    client: GroupService,
    bundles: list[Path],
    llm: BaseChatModel | None,
    model: str | None,
    summary: PipelineSummary,
) -> list[TaskGraph]:
    """Stages 2 and 3: atomic-task libraries, then composed task graphs."""
    # Registered once here; the atomic and compose stages reuse these MCP ids.
    registrar = Registrar(client)
    for b in bundles:
        await registrar.mcp_id(b)
    _log(f"[bold]2/4 atomic tasks[/] on {len(bundles)} environment(s)")
    libraries, atomic, summary.stages[ATOMIC] = await stage_atomic(
        config, store, client, bundles, llm, model, registrar
    )
    rows = {m.name: m for m in summary.mcps}
    for mcp, st in atomic.items():
        row = rows.get(mcp)
        if row is not None:
            row.atomic_tasks, row.coverage = st.tasks, st.coverage
            row.reason = st.error or row.reason
    _log("[bold]3/4 composed tasks[/]")
    graphs, summary.composition_failures, summary.stages[COMPOSE] = await stage_compose(
        config, store, client, libraries, llm, model, registrar
    )
    return graphs


async def run_pipeline(
    config: PipelineConfig, *, model: str | None = None, replay: Path | None = None
) -> PipelineSummary:
    """Run every stage; returns (and writes OUT/summary.json) the summary.

    With a model, every model call is recorded to OUT/model-calls.jsonl; `replay` names such a
    recording and answers the same calls from it without contacting any model, so a run with a
    model can be repeated (everything but the model's outputs is deterministic anyway)."""
    from weft_core.llm import RecordingChatModel, ReplayChatModel, make_chat_model
    from weft_core.refs import corpus_ref, mark_corpus_root
    from weft_tasks.rollout import rollout_stats, trace_ledger_problems

    t0 = time.perf_counter()
    model = (model if model is not None else config.pipeline.model) or None
    out = config.out_dir
    out.mkdir(parents=True, exist_ok=True)
    mark_corpus_root(out)  # every reference in the run's artifacts is relative to OUT
    llm: Any = None
    if replay is not None:
        if not model:
            raise ConfigError(
                "--replay needs the model the recording was made with (--model or [pipeline].model)"
            )
        llm = ReplayChatModel(replay)
    elif model:
        llm = make_chat_model(model)
        await probe_model(llm, model)
        llm = RecordingChatModel(llm, out / MODEL_CALLS)
    store = StageStore(out / "stages")
    summary = PipelineSummary(out_dir=str(out), model=model or "programmatic")

    bundles: list[Path] = []
    if not config.toolspace_only:
        bundles = await _environments(config, store, model, summary, replay, out)

    async with megamcp_session(config) as client:
        graphs: list[TaskGraph] = []
        if bundles:
            graphs = await _composed(config, store, client, bundles, llm, model, summary)
        composed = list(graphs)
        if config.toolspace.enabled:
            _log("[bold]toolspace[/]: tasks from walks on the real servers")
            found, record, summary.stages[TOOLSPACE] = await stage_toolspace(
                config, store, client, llm, model
            )
            graphs += found
            summary.composition_failures += [
                f"toolspace {why}: {n}" for why, n in sorted(record.rejected.items())
            ]
        summary.tasks_by_profile = dict(Counter(g.profile for g in graphs))
        if not graphs:
            raise StageError(
                "composition produced no task; see composition failures in summary.json"
            )
        _log(f"[bold]4/4 rollouts[/] of {len(graphs)} task(s)")
        traces, traces_path, summary.stages[ROLLOUTS] = await stage_rollouts(
            config, store, client, graphs, llm, model
        )
        if config.sft.enabled:
            _log(f"[bold]sft[/] data from {len(graphs)} task(s)")
            summary.sft, summary.stages[SFT] = await stage_sft(
                config, store, client, graphs, llm, model
            )
        if config.evolve.rounds and composed:
            # Evolution revises EnvBundles; ToolSpace tasks run on real servers, not bundles.
            _log(f"[bold]evolve[/]: {config.evolve.rounds} round(s) on {len(composed)} task(s)")
            summary.stages[EVOLVE] = await stage_evolve(
                config, store, client, composed, bundles, llm, model
            )

    summary.traces_path = corpus_ref(traces_path, out)
    summary.traces = len(traces)
    for t in traces:
        if t.failed_on_infrastructure:
            continue
        problems = trace_ledger_problems(t.messages, t.ledger)
        if t.final is not None and not problems:
            summary.traces_verified += 1
        summary.trace_problems += [f"{t.id}: {p}" for p in problems]
        summary.trace_problems += [f"{t.id}: {f}" for f in t.failures]
    from weft_tasks.gateway import capture_stats

    summary.model_calls = capture_stats(traces)
    summary.rollouts = [
        RolloutRow(
            view=c.view,
            harness=c.harness,
            policy=c.policy,
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
