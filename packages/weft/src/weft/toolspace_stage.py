"""The optional `[toolspace]` stage: ToolSpace's Algorithm 1 (weft-toolspace) on real MCP servers
hosted by the run's MegaMCP host; its accepted tasks join the composed ones in the rollout stage."""

from __future__ import annotations

import asyncio
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from weft.config import PipelineConfig
from weft.errors import ConfigError, StageError
from weft.stages import StageStore, ToolspaceRecord, file_hash
from weft_core.models import TaskGraph
from weft_megamcp.client import MegaMCPClient

__all__ = ["TOOLSPACE", "stage_toolspace"]

TOOLSPACE = "toolspace"


async def stage_toolspace(
    config: PipelineConfig,
    store: StageStore,
    client: MegaMCPClient,
    llm: BaseChatModel | None,
    model: str | None,
) -> tuple[list[TaskGraph], ToolspaceRecord, str]:
    """ToolSpace (weft-toolspace, Algorithm 1) on the real servers hosted by the run's MegaMCP
    host: record (or read `traces`), mine, cluster, walk, synthesize. The accepted task graphs
    and their stored s_0 are saved under the stage folder (tasks/, snapshots/)."""
    from weft_toolspace import servers
    from weft_toolspace.pipeline import run_toolspace
    from weft_toolspace.settings import ToolSpaceSettings
    from weft_toolspace.traces import load_traces
    from weft_toolspace.walk import WalkConfig
    from weft_toolspace.writers import LLMTaskWriter

    ts = config.toolspace
    traces_file: Path | None = None
    if ts.traces:
        traces_file = (config.base_dir / ts.traces).resolve()
        if not traces_file.is_file():
            raise ConfigError(f"[toolspace].traces: {ts.traces!r}: no such file")
    key = store.key(
        TOOLSPACE,
        {
            "toolspace": ts.model_dump(mode="json", exclude={"traces"}),
            "traces": file_hash(traces_file) if traces_file else None,
            "seed": config.pipeline.seed,
            "model": model,
        },
    )
    done = store.done(TOOLSPACE, key, ToolspaceRecord)
    folder = store.path(TOOLSPACE, key)
    state = "cached"
    if done is None:
        unknown = sorted(set(ts.servers) - set(servers.SERVERS))
        if unknown:
            raise ConfigError(
                f"[toolspace].servers: unknown {', '.join(unknown)} "
                f"(known: {', '.join(servers.SERVERS)})"
            )
        home = ToolSpaceSettings().server_home
        _ok, failed = await asyncio.to_thread(servers.install_all, ts.servers, home)
        if failed:
            raise StageError(
                "toolspace: servers not installable: "
                + "; ".join(f"{n}: {why}" for n, why in failed.items())
            )
        traces = None
        if traces_file is not None:
            traces, problems = load_traces([traces_file])
            if problems:
                raise ConfigError(f"[toolspace].traces: {problems[0]}")
        folder = store.begin(TOOLSPACE, key)
        run = await run_toolspace(
            client,
            folder,
            names=list(ts.servers),
            home=home,
            traces=traces,
            episodes=ts.episodes,
            steps=ts.steps,
            walk=WalkConfig(
                max_length=ts.length,
                min_length=min(ts.min_length, ts.length),
                environments=ts.envs,
                attempts=ts.attempts,
                seed=config.pipeline.seed,
            ),
            min_count=ts.min_count,
            resolution=ts.resolution,
            writer=LLMTaskWriter(llm) if llm is not None else None,
        )
        done = store.finish(
            TOOLSPACE,
            key,
            ToolspaceRecord(
                tasks=run.tasks,
                mined_traces=run.traces,
                mined_calls=run.calls,
                edges=run.edges,
                environments=run.environments,
                walks_tried=run.walks_tried,
                walks_kept=run.walks_kept,
                rejected=run.rejected,
            ),
        )
        state = "ran"
    graphs = [TaskGraph.load(folder / "tasks" / f"{tid}.json") for tid in done.tasks]
    return graphs, done, state
