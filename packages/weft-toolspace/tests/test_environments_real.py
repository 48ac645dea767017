"""Materialised environments (§4.1.3) on a MegaMCP host: a server known only from transcripts runs
as an envsynth bundle synthesized from its reconstructed definitions; a state-query environment of
the real memory server starts from s_0 seeded from recorded outputs, stored with the task and
replayed from; the stateless time server is answered by its replay server during walks and
acceptance (a recorded clock value no live server returns shows it)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import TaskGraph
from weft_toolspace import servers
from weft_toolspace.clusters import cluster, environment_of
from weft_toolspace.environments import materialise
from weft_toolspace.export import SNAPSHOTS, store_initial_state
from weft_toolspace.graph import build_graph
from weft_toolspace.models import EnvironmentKind, TraceCall, TraceRecord
from weft_toolspace.synthesize import synthesize
from weft_toolspace.traces import from_openai_messages
from weft_toolspace.walk import WalkConfig, Walker

# envsynth (about 20 s) or real servers, and a MegaMCP host: minutes on a loaded machine.
pytestmark = [pytest.mark.integration, pytest.mark.slow]


MEMORY_READ = {
    "entities": [
        {"name": "Ada Lovelace", "entityType": "person", "observations": ["engines"]},
        {"name": "Grace Hopper", "entityType": "person", "observations": []},
    ],
    "relations": [{"from": "Ada Lovelace", "to": "Grace Hopper", "relationType": "knows"}],
}


def _call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    fn = {"name": name, "arguments": json.dumps(args)}
    return {
        "role": "assistant",
        "tool_calls": [{"id": f"c{i}", "type": "function", "function": fn}],
    }


def _reply(i: int, content: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps(content)}


def _walk_cfg(attempts: int = 3) -> WalkConfig:
    return WalkConfig(min_length=2, max_length=2, environments=1, attempts=attempts, seed=1)


def kennel_transcript(trace_id: str, name: str) -> TraceRecord:
    """A made-up 'kennel' server seen only in an OpenAI transcript (no server to host). (Not a
    library of books: envsynth reads `book` as a verb, "book a room".)"""
    dog = {"dog_id": "DOG-0007", "name": name, "breed": "beagle"}
    msgs = [
        {"role": "user", "content": f"Register {name} the beagle and look the dog up."},
        _call(1, "kennel__create_dog", {"name": name, "breed": "beagle"}),
        _reply(1, {"dog": dog, "message": "created"}),
        _call(2, "kennel__get_dog", {"dog_id": "DOG-0007"}),
        _reply(2, dog),
        _call(3, "kennel__list_dogs", {}),
        _reply(3, {"items": [dog]}),
    ]
    return from_openai_messages(msgs, trace_id=trace_id)


async def test_trace_only_server_runs_as_an_envsynth_bundle(megamcp: Any, tmp_path: Path) -> None:
    traces = [kennel_transcript("k-1", "Rex"), kennel_transcript("k-2", "Bella")]
    graph = build_graph(traces, min_count=2)
    envs = cluster(graph, seed=1)
    assert EnvironmentKind.OPERATION in {e.kind for e in envs}  # create_dog: a write verb
    mat = await materialise(megamcp, envs, traces, tmp_path, hosted=set())
    assert sorted(mat.bundles) == ["kennel"] and (mat.bundles["kennel"] / "manifest.json").exists()
    rec = await megamcp.mcp("kennel")
    assert {"create_dog", "get_dog", "list_dogs"} <= {t.name for t in rec.tools}
    initial = await store_initial_state(
        megamcp, ["kennel"], tmp_path / SNAPSHOTS, bundles=mat.bundles
    )
    walker = Walker(megamcp, graph, environment_of(envs), _walk_cfg(), initial=initial)
    chains = await walker.run()
    assert chains, walker.stats.discarded
    first, second = chains[0].steps
    assert (first.tool, second.tool) == ("create_dog", "get_dog")
    # The id the bundle's create returned (not the recorded one) is what the walk looked up.
    assert second.arguments["dog_id"] in str(first.result)
    tasks, stats = await synthesize(megamcp, chains, export_to=tmp_path, initial=initial)
    assert stats.accepted >= 1, stats.rejected
    assert set(tasks[0].initial_dbs()) == {"kennel"}


def _memory_traces() -> list[TraceRecord]:
    """Two recorded reads of a knowledge graph (read it, open a node it showed) and one write
    elsewhere: memory is a stateful server whose reads form a state-query environment."""
    opened = {"entities": MEMORY_READ["entities"][:1], "relations": []}
    reads = [
        TraceRecord(
            id=f"read-{i}",
            source="ledger",
            calls=[
                TraceCall(mcp="memory", tool="read_graph", result=MEMORY_READ, mutated=False),
                TraceCall(
                    mcp="memory",
                    tool="open_nodes",
                    arguments={"names": ["Ada Lovelace"]},
                    result=opened,
                    mutated=False,
                ),
            ],
        )
        for i in range(2)
    ]
    entity = {"name": "Alan Turing", "entityType": "person", "observations": ["ciphers"]}
    write = TraceRecord(
        id="write",
        source="ledger",
        calls=[
            TraceCall(
                mcp="memory",
                tool="create_entities",
                arguments={"entities": [entity]},
                result=[entity],
                mutated=True,
            )
        ],
    )
    return [*reads, write]


async def test_state_query_s0_is_seeded_from_recorded_outputs(
    megamcp: Any, server_home: Path, tmp_path: Path
) -> None:
    await servers.register(megamcp, ["memory"], server_home)
    traces = _memory_traces()
    graph = build_graph(traces, min_count=2)
    envs = cluster(graph, seed=1)
    assert EnvironmentKind.STATE_QUERY in {e.kind for e in envs}
    mat = await materialise(megamcp, envs, traces, tmp_path, hosted={"memory"})
    assert "Ada Lovelace" in mat.seeds["memory"]["memory.jsonl"]
    out = tmp_path / "export"
    initial = await store_initial_state(megamcp, ["memory"], out / SNAPSHOTS, seeds=mat.seeds)
    env_of = environment_of(envs)

    # From the servers' empty start state the walk has nothing to open: every attempt fails.
    empty = Walker(megamcp, graph, env_of, _walk_cfg(2))
    assert await empty.run() == []
    walker = Walker(megamcp, graph, env_of, _walk_cfg(), initial=initial)
    chains = await walker.run()
    assert chains, walker.stats.discarded
    # A name the seeded graph holds, taken from what the live read returned.
    assert chains[0].steps[1].arguments["names"][0] in {"Ada Lovelace", "Grace Hopper"}

    tasks, stats = await synthesize(megamcp, chains, export_to=out, initial=initial)
    assert stats.accepted == 1, stats.rejected
    saved = TaskGraph.load(out / "tasks" / f"{tasks[0].id}.json")
    ref = saved.initial_snapshots["memory"]
    assert ref.workspace_uri is not None
    sha = ref.workspace_uri.rsplit("/", 1)[-1].removeprefix("sha256:")
    with tarfile.open(fileobj=io.BytesIO((out / SNAPSHOTS / f"{sha}.tar.gz").read_bytes())) as tar:
        names = tar.getnames()
        member = next(n for n in names if n.endswith("memory.jsonl"))
        stored = tar.extractfile(member)
        assert stored is not None and b"Ada Lovelace" in stored.read()
    # The same chain does not replay from the unseeded s_0: acceptance needs the stored seed.
    _, bare = await synthesize(megamcp, chains, export_to=tmp_path / "bare")
    assert bare.accepted == 0 and bare.rejected == {"not reproducible from s0": len(chains)}


CLOCK = "2031-05-05T10:00:00+09:00"  # a recorded clock value no live server returns today


def _time_traces() -> list[TraceRecord]:
    now = {"timezone": "Asia/Tokyo", "datetime": CLOCK, "is_dst": False}
    converted = {
        "source": now,
        "target": {"timezone": "Europe/Paris", "datetime": "2031-05-05T03:00:00+02:00"},
        "time_difference": "-7.0h",
    }
    args = {"source_timezone": "Asia/Tokyo", "time": "10:00", "target_timezone": "Europe/Paris"}
    return [
        TraceRecord(
            id=f"time-{i}",
            source="ledger",
            calls=[
                TraceCall(mcp="time", tool="get_current_time", arguments={"timezone": "Asia/Tokyo"}, result=now),
                TraceCall(mcp="time", tool="convert_time", arguments=args, result=converted),
            ],
        )
        for i in range(2)
    ]  # fmt: skip


async def test_walks_call_the_replay_server_not_the_live_clock(
    megamcp: Any, server_home: Path, tmp_path: Path
) -> None:
    await servers.register(megamcp, ["time"], server_home)  # the live server first
    traces = _time_traces()
    graph = build_graph(traces, min_count=2)
    envs = cluster(graph, seed=1)
    assert {e.kind for e in envs} == {EnvironmentKind.STATELESS}
    mat = await materialise(megamcp, envs, traces, tmp_path, hosted={"time"})
    assert sorted(mat.replayed) == ["time"]
    initial = await store_initial_state(megamcp, ["time"], tmp_path / SNAPSHOTS)
    walker = Walker(megamcp, graph, environment_of(envs), _walk_cfg(), initial=initial)
    chains = await walker.run()
    assert chains, walker.stats.discarded
    first = chains[0].steps[0]
    assert first.tool == "get_current_time" and first.result["datetime"] == CLOCK
    tasks, stats = await synthesize(megamcp, chains, export_to=tmp_path, initial=initial)
    assert stats.accepted == 1, stats.rejected
    assert tasks[0].initial_snapshots.keys() == {"time"}
