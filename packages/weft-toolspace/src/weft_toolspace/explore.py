"""A scripted exploring policy that drives real MCP servers so MegaMCP's ledger records real
executions (the trace corpus M). It knows no tool's semantics beyond argument names: each step it
prefers a tool that can consume a value of the previous output (so data flows between adjacent
calls, as in an agent's trajectory), fills arguments from what earlier outputs showed or from a small
vocabulary, and its mistakes (reading what does not exist, querying a missing table) are kept: they
are the errors that retry edges are mined from. Label: `scripted-explorer`, not a model."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from weft_toolspace.models import TraceRecord
from weft_toolspace.traces import from_group_ledger, parse_value

if TYPE_CHECKING:
    from weft_megamcp import MegaMCPClient
    from weft_megamcp.registry import MCPRecord

WORDS = (
    "alpha",
    "budget",
    "harbor",
    "lantern",
    "meadow",
    "orbit",
    "pepper",
    "quartz",
    "river",
    "saffron",
    "timber",
    "velvet",
    "willow",
    "zephyr",
    "copper",
    "falcon",
)
PEOPLE = ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Katherine Johnson", "Linus Pauling")
ZONES = ("Europe/Paris", "America/New_York", "Asia/Tokyo", "UTC", "Australia/Sydney")

# Which pool of earlier values an argument draws from, by argument name.
_POOL_OF_ARG = {
    "path": "files",
    "source": "files",
    "paths": "files",
    "entityName": "names",
    "entityNames": "names",
    "names": "names",
    "from": "names",
    "to": "names",
    "table_name": "tables",
    "branch_name": "branches",
    "target": "branches",
    "source_timezone": "zones",
    "target_timezone": "zones",
    "timezone": "zones",
    "time": "times",
}
_NEW_NAME_TOOLS = {"write_file", "create_directory", "create_table", "git_create_branch"}


@dataclass
class _Pools:
    values: dict[str, list[str]] = field(default_factory=dict)
    last: dict[str, set[str]] = field(default_factory=dict)

    def add(self, pool: str, value: str, *, fresh: bool) -> None:
        vals = self.values.setdefault(pool, [])
        if value not in vals:
            vals.append(value)
        if fresh:
            self.last.setdefault(pool, set()).add(value)


def _leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [
            x for i, v in enumerate(value) for x in _leaves(v, f"{path}.{i}" if path else str(i))
        ]
    return [(path, value)]


def _observe(pools: _Pools, tool: str, args: dict[str, Any], result: Any, ok: bool) -> None:
    """Sort what the output showed into pools (the policy 'reading' the observation)."""
    pools.last = {}
    if not ok:
        return
    text = result if isinstance(result, str) else ""
    for m in re.finditer(r"\[FILE\] (\S+)", text):
        pools.add("files", m.group(1), fresh=True)
    for m in re.finditer(r"^[* ] (\S+)$", text, re.M):
        pools.add("branches", m.group(1), fresh=True)
    for path, leaf in _leaves(result):
        key = path.rsplit(".", 1)[-1]
        if not isinstance(leaf, str):
            continue
        if (key in ("name", "from", "to") and "entities" in path) or (
            key == "name" and "." in path
        ):
            pools.add("names" if " " in leaf or "entities" in path else "tables", leaf, fresh=True)
        elif key in ("timezone",):
            pools.add("zones", leaf, fresh=True)
        elif key == "datetime" and "T" in leaf:
            pools.add("times", leaf[11:16], fresh=True)
    if tool == "write_file" and "path" in args:
        pools.add("files", str(args["path"]), fresh=False)
    if tool == "create_table":
        created = re.search(r"CREATE TABLE (\w+)", str(args.get("query", "")))
        if created:
            pools.add("tables", created.group(1), fresh=False)
    if tool == "create_entities":
        for e in args.get("entities", []):
            pools.add("names", str(e.get("name")), fresh=False)
    if tool == "git_create_branch":
        pools.add("branches", str(args.get("branch_name")), fresh=False)


class ExplorerPolicy:
    """Chooses the next (mcp, tool, arguments) from the tools' input schemas and earlier outputs."""

    def __init__(self, tools: dict[str, list[tuple[str, dict[str, Any]]]], seed: int) -> None:
        self.tools = tools  # mcp id -> [(tool name, input schema)]
        self.rng = random.Random(seed)
        self.pools = _Pools()

    def _pick(self, pool: str, *, prefer_last: bool = True) -> str | None:
        last = sorted(self.pools.last.get(pool, ()))
        if last and prefer_last and self.rng.random() < 0.85:
            return self.rng.choice(last)
        vals = self.pools.values.get(pool, [])
        return self.rng.choice(vals) if vals and self.rng.random() < 0.8 else None

    def _consumes_last(self, schema: dict[str, Any]) -> bool:
        props = schema.get("properties", {})
        return any(_POOL_OF_ARG.get(a) in self.pools.last for a in props)

    def next_call(self) -> tuple[str, str, dict[str, Any]]:
        flat = [(m, t, s) for m, ts in self.tools.items() for t, s in ts]
        feeding = [c for c in flat if self._consumes_last(c[2])]
        mcp, tool, schema = (
            self.rng.choice(feeding)
            if feeding and self.rng.random() < 0.7
            else self.rng.choice(flat)
        )
        return mcp, tool, self.arguments(tool, schema)

    def arguments(self, tool: str, schema: dict[str, Any]) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        out: dict[str, Any] = {}
        for name, prop in props.items():
            if name not in required and self.rng.random() < 0.7:
                continue
            value = self._value(tool, name, prop)
            if value is not None:
                out[name] = value
        return out

    def _word(self) -> str:
        return self.rng.choice(WORDS)

    def _value(self, tool: str, arg: str, prop: dict[str, Any]) -> Any:
        r = self.rng
        pool = _POOL_OF_ARG.get(arg)
        if arg == "repo_path":
            return "."
        if arg == "query":
            return self._sql(tool)
        if tool in _NEW_NAME_TOOLS and arg in ("path", "branch_name"):
            return f"{self._word()}.txt" if arg == "path" and tool == "write_file" else self._word()
        if arg == "destination":
            return f"{self._word()}-moved.txt"
        if arg == "entities":
            name = self._pick("names") or r.choice(PEOPLE)
            kind = r.choice(("person", "project", "city"))
            return [
                {"name": name, "entityType": kind, "observations": [f"works on {self._word()}"]}
            ]
        if arg == "relations":
            a, b = self._pick("names") or r.choice(PEOPLE), r.choice(PEOPLE)
            return [{"from": a, "to": b, "relationType": "knows"}]
        if arg == "observations":
            name = self._pick("names") or r.choice(PEOPLE)
            return [{"entityName": name, "contents": [f"likes {self._word()}"]}]
        if arg == "deletions":
            return [{"entityName": self._pick("names") or r.choice(PEOPLE), "observations": []}]
        if arg == "content":
            # A value just read is written down as it is (the way an agent copies a result).
            fresh = sorted(self.pools.last.get("names", ()))
            if fresh and r.random() < 0.7:
                return r.choice(fresh)
            ref = self._pick("names") or self._pick("tables") or self._word()
            return f"Notes about {ref}: {self._word()} and {self._word()}."
        if arg == "edits":
            return [{"oldText": "Notes", "newText": "Summary"}]
        if arg == "files":
            return [self._pick("files") or "."]
        if arg in ("message", "pattern", "insight"):
            return self._word()
        if pool is not None:
            picked = self._pick(pool)
            if picked is not None:
                return [picked] if prop.get("type") == "array" else picked
            fallback = {
                "files": f"{self._word()}.txt",
                "names": r.choice(PEOPLE),
                "tables": self._word(),
                "branches": self._word(),
                "zones": r.choice(ZONES),
                "times": f"{r.randint(0, 23):02d}:{r.choice((0, 15, 30, 45)):02d}",
            }[pool]
            return [fallback] if prop.get("type") == "array" else fallback
        return self._by_type(prop)

    def _sql(self, tool: str) -> str:
        table = self._pick("tables") or self._word()
        if tool == "create_table":
            return f"CREATE TABLE {self._word()} (id INTEGER PRIMARY KEY, name TEXT, note TEXT)"
        if tool == "write_query":
            name = self._pick("names") or self.rng.choice(PEOPLE)
            return f"INSERT INTO {table} (name, note) VALUES ('{name}', '{self._word()}')"
        return f"SELECT * FROM {table}"

    def _by_type(self, prop: dict[str, Any]) -> Any:
        kind = prop.get("type")
        if "enum" in prop:
            return self.rng.choice(prop["enum"])
        if kind == "integer":
            return self.rng.randint(1, 5)
        if kind == "number":
            return round(self.rng.uniform(1, 5), 2)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "array":
            return []
        if kind == "object":
            return {}
        return self._word()

    def observe(self, tool: str, args: dict[str, Any], result: Any, ok: bool) -> None:
        _observe(self.pools, tool, args, result, ok)


async def explore(
    client: MegaMCPClient,
    records: list[MCPRecord],
    *,
    episodes: int,
    steps: int,
    seed: int = 0,
    servers_per_episode: int = 2,
    on_episode: Callable[[TraceRecord], None] | None = None,
) -> list[TraceRecord]:
    """Run `episodes` fresh groups over random subsets of the servers; returns their ledgers as
    traces (each group is closed in a `finally`)."""
    rng = random.Random(seed)
    traces: list[TraceRecord] = []
    for ep in range(episodes):
        chosen = rng.sample(records, min(servers_per_episode, len(records)))
        tools = {r.mcp_id: [(t.name, dict(t.input_schema)) for t in r.tools] for r in chosen}
        policy = ExplorerPolicy(tools, seed=seed * 1000 + ep)
        group = await client.create_group([r.mcp_id for r in chosen])
        try:
            for _ in range(steps):
                mcp, tool, args = policy.next_call()
                res = await client.call_tool(group, mcp, tool, args)
                result = (
                    None
                    if res.is_error
                    else parse_value(res.structured if res.structured is not None else res.text)
                )
                policy.observe(
                    tool, args, result if result is not None else res.text, not res.is_error
                )
            ledger = await client.ledger(group)
        finally:
            await client.close(group)
        trace = from_group_ledger(ledger, trace_id=f"explore-{seed}-{ep}")
        traces.append(trace)
        if on_episode is not None:
            on_episode(trace)
    return traces
