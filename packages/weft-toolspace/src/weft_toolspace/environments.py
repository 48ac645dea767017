"""Materialised environments (§4.1.3): what each cluster of the graph runs on during walks and
acceptance replays.

- operation environments run on a database: a hosted real server keeps its own session state; an
  example MCP or a server known only from traces (tools seen in an OpenAI transcript, no server to
  host) runs as a weft-envsynth bundle. For the latter the definitions are reconstructed from the
  recorded calls (`spec_from_traces`: tool names, argument and result shapes, recorded values as
  schema examples) and synthesized by envsynth's programmatic strategy, then registered in MegaMCP
  under the server's name, so the graph's nodes resolve to it;
- state-query environments start from an initial snapshot s_0 built from recorded outputs
  (`seed_files`: the knowledge graph a read returned becomes the memory file, a file read becomes
  that file), stored with the task and replayed from;
- stateless environments are answered by a replay server over the recorded results
  (`replay.write_replay_module`), registered as a new version of the server's name, so walks and
  acceptance replays never call the live server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from weft_core.models import MCPSpec, ToolSpec
from weft_toolspace import servers
from weft_toolspace.exceptions import ToolSpaceRuntimeError, ToolSpaceUserError
from weft_toolspace.graph import leaves
from weft_toolspace.models import Environment, EnvironmentKind, TraceRecord
from weft_toolspace.replay import write_replay_module
from weft_toolspace.traces import write_verb

if TYPE_CHECKING:
    from weft_megamcp import MegaMCPClient

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "mcps"


def example_names(examples: Path = EXAMPLES) -> list[str]:
    return sorted(p.stem for p in examples.glob("*.json"))


def example_bundles(names: list[str], folder: Path, examples: Path = EXAMPLES) -> dict[str, Path]:
    """{name: bundle} of the example MCPs `names` (examples/mcps/<name>.json), synthesized by
    weft-envsynth's programmatic strategy into `folder` (a bundle already there is reused)."""
    from weft_envsynth.pipeline import synthesize_file

    known = example_names(examples)
    out: dict[str, Path] = {}
    for name in names:
        if name not in known:
            raise ToolSpaceUserError(f"no example MCP {name!r} (known: {', '.join(known)})")
        bundle = folder / name
        if not (bundle / "manifest.json").exists():
            result = synthesize_file(examples / f"{name}.json", folder, bundle_name=name)
            if result.bundle is None:
                raise ToolSpaceRuntimeError(
                    f"example {name}: envsynth {result.status}: {result.reason}"
                )
            bundle = Path(result.bundle)
        out[name] = bundle
    return out


async def register_bundles(client: MegaMCPClient, bundles: dict[str, Path]) -> dict[str, str]:
    """Register bundles under their names; returns {name: mcp id}."""
    out: dict[str, str] = {}
    for name, path in sorted(bundles.items()):
        rec = await client.register(path, name=name)
        out[name] = rec.mcp_id
    return out


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"


def _schema_of(values: list[Any]) -> dict[str, Any]:
    """A JSON schema covering the recorded values (integer widened to number when both occur)."""
    types = {_json_type(v) for v in values if v is not None}
    if types == {"integer", "number"}:
        types = {"number"}
    kind = types.pop() if len(types) == 1 else "string"
    out: dict[str, Any] = {"type": kind}
    if kind == "object":
        keys: dict[str, list[Any]] = {}
        for v in values:
            for k, x in v.items():
                keys.setdefault(k, []).append(x)
        out["properties"] = {k: _schema_of(xs) for k, xs in keys.items()}
    elif kind == "array":
        items = [x for v in values for x in v]
        if items:
            out["items"] = _schema_of(items)
    else:
        seen = list(dict.fromkeys(json.dumps(v) for v in values if v is not None))
        out["examples"] = [json.loads(v) for v in seen[:3]]
    return out


_VERB_SENSE = {
    "create": ("add", "create", "register", "insert", "new", "make"),
    "get": ("get", "read", "fetch", "view", "show", "describe", "lookup"),
    "list": ("list", "search", "find", "query"),
    "update": ("update", "edit", "set", "modify", "change"),
    "delete": ("delete", "remove", "drop"),
}
_SENTENCE = {
    "create": "Create a new {obj} record.",
    "get": "Get one {obj} by its id.",
    "list": "List {obj} records.",
    "update": "Update an existing {obj}.",
    "delete": "Delete a {obj}.",
}


def describe(tool: str) -> str:
    """A tool's description from its name alone, in the words envsynth reads definitions by (a
    transcript's `add_book` creates a book record, `lend_book` lends a book)."""
    verb, _, obj = tool.partition("_")
    obj = obj.replace("_", " ") or "item"
    for sense, verbs in _VERB_SENSE.items():
        if verb.lower() in verbs:
            return _SENTENCE[sense].format(obj=obj.removesuffix("s") if sense == "list" else obj)
    return f"{verb.capitalize()} a {obj} (changes its state)."


def spec_from_traces(traces: Iterable[TraceRecord], mcp: str) -> MCPSpec:
    """Tool definitions of server `mcp` reconstructed from its recorded calls: per tool, the
    arguments every call gave are required, the others optional; types and examples from the
    recorded values; the output schema from the recorded results; the description from the
    tool's name (all a transcript tells about a server nobody can host)."""
    calls: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    for tr in traces:
        for c in tr.calls:
            if c.mcp == mcp:
                calls.setdefault(c.tool, []).append((c.arguments, c.result if c.ok else None))
    if not calls:
        raise ToolSpaceUserError(f"no recorded call of server {mcp!r} to define its tools from")
    tools: list[ToolSpec] = []
    for tool, seen in sorted(calls.items()):
        names = list(dict.fromkeys(k for args, _ in seen for k in args))
        props = {n: _schema_of([a[n] for a, _ in seen if n in a]) for n in names}
        required = [n for n in names if all(n in a for a, _ in seen)]
        results = [r for _, r in seen if r is not None]
        tools.append(
            ToolSpec(
                name=tool,
                description=describe(tool),
                input_schema={"type": "object", "properties": props, "required": required},
                output_schema=_schema_of(results) if results else None,
            )
        )
    return MCPSpec(
        name=mcp,
        description=f"The {mcp} server as its recorded calls show it ({len(tools)} tools).",
        tools=tools,
        source=f"traces:{mcp}",
    )


def synthesize_bundle(traces: Iterable[TraceRecord], mcp: str, folder: Path) -> Path:
    """The envsynth bundle of a server known only from traces, under `folder/<mcp>`."""
    from weft_envsynth.pipeline import synthesize_spec

    spec = spec_from_traces(traces, mcp)
    result = synthesize_spec(spec, folder, bundle_name=mcp, source=f"traces:{mcp}")
    if result.bundle is None:
        raise ToolSpaceRuntimeError(
            f"server {mcp} (from traces): envsynth {result.status}: {result.reason}"
        )
    return Path(result.bundle)


def _memory_file(mcp: str) -> str | None:
    """The workspace file a real server keeps its knowledge graph in (memory: memory.jsonl)."""
    spec = servers.SPECS.get(mcp)
    for value in spec.env.values() if spec else ():
        if value.startswith(servers.WS + "/"):
            return value.removeprefix(servers.WS + "/")
    return None


def _safe(path: Any) -> str | None:
    if not isinstance(path, str) or not path.strip():
        return None
    p = PurePosixPath(path)
    if p.is_absolute() or ".." in p.parts or p.parts[:1] == (".git",):
        return None
    return str(p)


_IDENTITY = ("name", "path", "destination")


def seed_files(traces: Iterable[TraceRecord], mcp: str) -> dict[str, str]:
    """s_0 of a state-query environment from what its reads returned ({workspace path: text}):
    the entities and relations any read of a knowledge graph showed (the first recorded version
    of each), written in the memory server's file format, and each file a `read_*file` call
    returned, at the path it was read from. Only what was there before the trace: an object an
    earlier call of the same trace wrote (its name, path or text among that call's arguments)
    was made by the trace, not found in s_0 (an exploring agent that starts from empty servers
    seeds nothing)."""
    entities: dict[str, dict[str, Any]] = {}
    relations: dict[str, dict[str, Any]] = {}
    files: dict[str, str] = {}
    for tr in traces:
        # What the trace's earlier writes named as the object they made (a `name`, a `path`)
        # and every text they wrote (observations, relation ends).
        made: set[str] = set()
        written: set[str] = set()
        for c in tr.calls:
            wrote = c.ok and (c.mutated or (c.mutated is None and write_verb(c.tool)))
            texts = [(p, v) for p, v in leaves(c.arguments) if isinstance(v, str)] if wrote else []
            names = {v for p, v in texts if p.rsplit(".", 1)[-1] in _IDENTITY}
            if c.mcp != mcp or not c.ok or wrote:  # a write's result shows what it made
                made |= names
                written |= {v for _, v in texts}
                continue
            r = c.result
            if isinstance(r, dict):
                for e in r.get("entities") or []:
                    if (
                        isinstance(e, dict)
                        and isinstance(e.get("name"), str)
                        and "entityType" in e
                        and e["name"] not in made
                    ):
                        entities.setdefault(
                            e["name"],
                            {
                                "type": "entity",
                                "name": e["name"],
                                "entityType": str(e["entityType"]),
                                "observations": [
                                    str(o) for o in e.get("observations") or [] if o not in written
                                ],
                            },
                        )
                for rel in r.get("relations") or []:
                    if (
                        isinstance(rel, dict)
                        and {"from", "to", "relationType"} <= set(rel)
                        and not {rel["from"], rel["to"], rel["relationType"]} <= written
                    ):
                        rec = {
                            "type": "relation",
                            **{k: str(rel[k]) for k in ("from", "to", "relationType")},
                        }
                        relations.setdefault(json.dumps(rec, sort_keys=True), rec)
            path = _safe(c.arguments.get("path"))
            if (
                path
                and path not in made
                and re.match(r"read(_text)?_file$", c.tool)
                and isinstance(r, str)
            ):
                files.setdefault(path, r if r.endswith("\n") or not r else r + "\n")
    graph_file = _memory_file(mcp)
    out = dict(files)
    if graph_file and (entities or relations):
        lines = [json.dumps(e) for e in entities.values()]
        # A relation needs both ends in the graph, as the server itself keeps it.
        lines += [
            json.dumps(r)
            for r in relations.values()
            if r["from"] in entities and r["to"] in entities
        ]
        out[graph_file] = "\n".join(lines)
    return out


def stateless(mcp: str, traces: Iterable[TraceRecord]) -> bool:
    """Whether server `mcp` keeps no state: a real server pointed at neither a workspace nor a
    session DB has nowhere to keep any (time); a server known from traces only, when no
    recorded call of it changed state. (The ledger's per-call flag is not used for real servers:
    a command-tier call is marked mutated when anything in its session changed, which a read
    can do: `git status` refreshes the index, git's first call runs its init; and traces
    recorded before MegaMCP stopped counting the DB file it creates for a sandboxed process
    mark every first call of a session.)"""
    spec = servers.SPECS.get(mcp)
    if spec is not None:
        values = (*spec.args, *spec.env.values())
        return not any(servers.WS in v or servers.DB in v for v in values)
    return not any(c.mutated for t in traces for c in t.calls if c.mcp == mcp)


@dataclass
class Materialised:
    """How each server of the graph is hosted for walks and replays."""

    bundles: dict[str, Path] = field(default_factory=dict)  # operation: envsynth bundles
    seeds: dict[str, dict[str, str]] = field(default_factory=dict)  # state-query: s_0 files
    replayed: dict[str, Path] = field(default_factory=dict)  # stateless: replay modules

    def summary(self) -> dict[str, list[str]]:
        return {
            "bundles": sorted(self.bundles),
            "seeded": sorted(self.seeds),
            "replayed": sorted(self.replayed),
        }


async def materialise(
    client: MegaMCPClient,
    envs: list[Environment],
    traces: list[TraceRecord],
    folder: Path,
    *,
    hosted: set[str],
    bundles: dict[str, Path] | None = None,
) -> Materialised:
    """Materialise every environment (§4.1.3) on `client`, which already hosts the servers in
    `hosted` (real servers and the given `bundles`): servers of operation environments with no
    host get an envsynth bundle from their recorded definitions; stateless servers (`stateless`)
    are replaced by replay servers; the other servers of state-query environments get s_0 files
    from recorded outputs. Files land under `folder` (bundles/, replay/)."""
    out = Materialised(bundles=dict(bundles or {}))
    kinds: dict[str, set[EnvironmentKind]] = {}
    for e in envs:
        for m in e.mcps:
            kinds.setdefault(m, set()).add(e.kind)
    for mcp, ks in sorted(kinds.items()):
        if mcp not in hosted and mcp not in out.bundles:
            if EnvironmentKind.OPERATION in ks:
                out.bundles[mcp] = synthesize_bundle(traces, mcp, folder / "bundles")
                await register_bundles(client, {mcp: out.bundles[mcp]})
                continue
            if not stateless(mcp, traces):
                raise ToolSpaceUserError(
                    f"server {mcp!r}: known only from traces, reads state it never wrote"
                )
        if mcp not in out.bundles and stateless(mcp, traces):
            module = write_replay_module(traces, mcp, folder / "replay" / f"replay_{mcp}.py")
            await client.register(module, name=mcp)  # a new version of `mcp`: groups get it
            out.replayed[mcp] = module
        elif EnvironmentKind.STATE_QUERY in ks and mcp in servers.SPECS:
            files = seed_files(traces, mcp)
            if files:
                out.seeds[mcp] = files
    return out


def write_tree(files: dict[str, str], root: Path) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
