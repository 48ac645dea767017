"""Benchmark: behavioural fidelity of synthesized environments against real MCP servers (offline).

The four real servers that weft-toolspace installs (`uv run weft-toolspace install`, into
`~/.cache/weft/toolspace-servers`, launched the way weft-toolspace hosts them):
`@modelcontextprotocol/server-filesystem`, `@modelcontextprotocol/server-memory` (npm),
`mcp-server-git`, `mcp-server-sqlite` (PyPI).

Per server, its `tools/list` answer is the only input to `weft_envsynth.synthesize_spec` (no
model). A generic call generator (`CallGen`: nothing in it names a server or a tool) builds
sequences of calls from the input schemas: enums, bounds, arrays and nested objects; strings by
what the schema and description say they are (a path under the folder the server was given, an
SQL statement of the kind the description names, a name); values flow from earlier calls and
from the real server's earlier results. Each sequence runs first on the real server, then on
the synthesized one, from equivalent initial states in the same folder (so absolute paths are
the same): an empty folder / an empty graph / a git repository with one commit (its files,
branch, message, author and date imported through `weft_envsynth.import_state`) / an empty
SQLite DB (the bundle's seed rows are removed: "empty" on both sides).

A server given a folder with content whose tools cannot change files (version control) is used
beside an editor: a quarter of the steps write a new file or rewrite one (`user_edit`), the same
on both sides and not scored, so staging, committing and diffs see changes.

State is what the tools show: after every call each side is probed with its read-only tools
(annotation `readOnlyHint`, or for unannotated servers a read/list/describe verb) whose required
arguments need no fresh value (the folder, an enum, an SELECT over each table created so far).
Per call:

* agree%: both returned an error, or both did not (an answer that is only an error message,
  `Error: ...` / `Database error: ...`, counts as an error whether or not the server flags it);
* reprod.%: the synthesized probes changed, of the calls that changed the real probes;
* spurious%: the synthesized probes changed, of the calls that changed nothing real;
* values%: the share of the real result's values (string tokens, numbers; the folder's path
  removed) that also occur in the synthesized result, over calls the real server answered with
  values (an error on the synthesized side counts 0).

    uv run python benchmarks/envsynth/fidelity.py --real-servers [--sequences N] [--length L]
        [--server NAME] [--json FILE] [--before GIT_REF]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVERS = ("filesystem", "memory", "git", "sqlite")
README = "# fidelity\n\nA repository with one commit.\n"
WORDS = (
    "alpha", "budget", "harbor", "lantern", "meadow", "orbit", "pepper", "quartz",
    "river", "saffron", "timber", "velvet", "willow", "zephyr", "copper", "falcon",
)  # fmt: skip
READ_VERBS = ("read", "list", "get", "describe", "show", "search", "open", "status", "log")


# ----------------------------------------------------------------------------- call generator


def _words(name: str) -> list[str]:
    return [
        w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()) if w
    ]


def schema_type(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    if t is None and "anyOf" in schema:
        return schema_type(next((s for s in schema["anyOf"] if s.get("type") != "null"), {}))
    return str(t or "string")


def is_read_only(tool: dict[str, Any]) -> bool:
    ann = tool.get("annotations") or {}
    if "readOnlyHint" in ann:
        return bool(ann["readOnlyHint"])
    return _words(tool["name"])[-1:] != [] and any(v in _words(tool["name"]) for v in READ_VERBS)


ERROR_TEXT = re.compile(r"\s*(\w+ )?error\b", re.I)
SQL_KINDS = ("create table", "insert", "update", "delete", "select")


@dataclass
class CallGen:
    """Arguments from a tool's input schema and what earlier calls used and returned.

    Strings are typed by the argument's name and the descriptions: a path (under `root`, the
    folder the server was given), an SQL statement (of the kinds the tool's description names),
    or a value keyed by its last name word (`entityName`, `names`, `name` share the key `name`),
    drawn from earlier values of that key with probability `reuse`."""

    root: str
    rng: random.Random
    reuse: float = 0.7
    pool: dict[str, list[Any]] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    tables: dict[str, list[str]] = field(default_factory=dict)  # table -> text columns
    n: int = 0

    def fresh_word(self) -> str:
        self.n += 1
        return f"{self.rng.choice(WORDS)}{self.n}"

    def key(self, name: str, schema: dict[str, Any]) -> str:
        words = _words(name)
        desc = str(schema.get("description", "")).lower()
        if "name" in words or "names" in words or "name of" in desc:
            return "name"
        last = words[-1] if words else name
        return last[:-1] if last.endswith("s") and len(last) > 3 else last

    def kind(self, tool: dict[str, Any], name: str, schema: dict[str, Any]) -> str:
        words = set(_words(name))
        desc = (str(schema.get("description", "")) + " " + str(tool.get("description", ""))).lower()
        if words & {"path", "paths", "source", "destination", "file", "files", "dir", "directory"}:
            return "path"
        if "query" in words and ("sql" in desc or "select" in desc):
            return "sql"
        if "sql" in desc and any(k in desc for k in SQL_KINDS):
            return "sql"
        return "text"

    # -- values

    def path(self, tool: dict[str, Any], name: str) -> str:
        """A folder argument (repo, dir, root) names an existing folder; a write's first path or
        a destination is new more often than not; any other path names one that exists."""
        words = set(_words(name))
        if words & {"repo", "dir", "directory", "root", "folder", "cwd"}:
            return str(self.rng.choice([self.root, *self.dirs]))
        verbs = set(_words(tool["name"]))
        fresh = bool(words & {"destination", "dest", "target", "new"}) or (
            bool(verbs & {"write", "create", "make", "new", "mkdir", "touch"})
            and not words & {"source", "src"}
        )
        known = self.paths + self.dirs
        if known and self.rng.random() < (0.3 if fresh else 0.85):
            return str(self.rng.choice([*known, self.root]))
        parent = self.rng.choice([self.root, *self.dirs])
        is_dir = "director" in str(tool.get("description", "")).lower().split(".")[0]
        return f"{parent}/{self.fresh_word()}" + ("" if is_dir else ".txt")

    def sql(self, tool: dict[str, Any], schema: dict[str, Any]) -> str:
        desc = f"{tool.get('description', '')} {schema.get('description', '')}".lower()
        desc = re.sub(r"\bcreate (a )?(new )?table", "create table", desc)
        kinds = [k for k in SQL_KINDS if k in desc] or ["select"]
        kind = self.rng.choice(kinds)
        if kind != "create table" and not self.tables:
            return f"SELECT * FROM {self.fresh_word()}"  # nothing exists yet: a real mistake
        if kind == "create table":
            t = self.fresh_word()
            self.tables[t] = ["name", "note"]
            return f"CREATE TABLE {t} (id INTEGER PRIMARY KEY, name TEXT, note TEXT, qty INTEGER)"
        t = self.rng.choice(list(self.tables))
        word = self.value_text("name", {})
        if kind == "insert":
            qty = self.rng.randint(1, 9)
            return (
                f"INSERT INTO {t} (name, note, qty) VALUES ('{word}', '{self.fresh_word()}', {qty})"
            )
        if kind == "update":
            return f"UPDATE {t} SET qty = {self.rng.randint(1, 9)} WHERE name = '{word}'"
        if kind == "delete":
            return f"DELETE FROM {t} WHERE name = '{word}'"
        if self.rng.random() < 0.5:
            return f"SELECT * FROM {t} WHERE name = '{word}'"
        return f"SELECT * FROM {t}"

    def value_text(self, key: str, schema: dict[str, Any]) -> str:
        have = [v for v in self.pool.get(key, []) if isinstance(v, str)]
        if key == "table" and self.tables:
            have = list(self.tables)
        if have and self.rng.random() < self.reuse:
            return str(self.rng.choice(have))
        return self.fresh_word()

    def value(self, tool: dict[str, Any], name: str, schema: dict[str, Any], depth: int = 0) -> Any:
        if schema.get("enum"):
            return self.rng.choice(schema["enum"])
        t = schema_type(schema)
        if t == "boolean":
            return self.rng.random() < 0.3
        if t in ("integer", "number"):
            lo = int(schema.get("minimum", 1))
            hi = int(schema.get("maximum", max(lo, 1) + 4))
            return self.rng.randint(lo, max(lo, hi))
        if t == "array":
            items = schema.get("items") or {}
            return [self.value(tool, name, items, depth + 1) for _ in range(self.rng.randint(1, 2))]
        if t == "object":
            return self.obj(tool, schema, depth + 1)
        kind = self.kind(tool, name, schema)
        if kind == "path":
            return self.path(tool, name)
        if kind == "sql":
            return self.sql(tool, schema)
        return self.value_text(self.key(name, schema), schema)

    def obj(self, tool: dict[str, Any], schema: dict[str, Any], depth: int = 0) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if depth > 4:
                break
            if name in required or self.rng.random() < 0.3:
                out[name] = self.value(tool, name, sub if isinstance(sub, dict) else {}, depth)
        return out

    def call(self, tool: dict[str, Any]) -> dict[str, Any]:
        args = self.obj(tool, tool.get("inputSchema") or {})
        self.learn_args(tool, args)
        return args

    # -- what flows into later calls

    def learn_args(self, tool: dict[str, Any], args: dict[str, Any]) -> None:
        props = (tool.get("inputSchema") or {}).get("properties") or {}

        def walk(name: str, value: Any, schema: dict[str, Any]) -> None:
            if isinstance(value, dict):
                sub = schema.get("properties") or {}
                for k, v in value.items():
                    walk(k, v, sub.get(k) or {})
            elif isinstance(value, list):
                for v in value:
                    walk(name, v, schema.get("items") or {})
            elif isinstance(value, str) and "enum" not in schema:
                if self.kind(tool, name, schema) == "path":
                    return
                if self.kind(tool, name, schema) != "sql":
                    bucket = self.pool.setdefault(self.key(name, schema), [])
                    if value not in bucket:
                        bucket.append(value)

        for k, v in args.items():
            walk(k, v, props.get(k) or {})

    def learn_result(
        self, tool: dict[str, Any], args: dict[str, Any], ok: bool, result: Any
    ) -> None:
        """A successful write makes its paths exist; a result's keyed values join their pools."""
        if ok and not is_read_only(tool):
            desc = str(tool.get("description", "")).lower()
            for name, value in args.items():
                if self.kind(tool, name, {}) != "path" or not isinstance(value, str):
                    continue
                bucket = self.dirs if "director" in desc.split(".")[0] else self.paths
                if value not in bucket and value != self.root:
                    bucket.append(value)
        if ok:

            def walk(key: str, value: Any) -> None:
                if isinstance(value, dict):
                    for k, v in value.items():
                        walk(k, v)
                elif isinstance(value, list):
                    for v in value:
                        walk(key, v)
                elif isinstance(value, str) and key and len(value) < 80:
                    bucket = self.pool.setdefault(self.key(key, {}), [])
                    if value not in bucket:
                        bucket.append(value)

            if isinstance(result, (dict, list)):
                walk("", result)

    def probes(self, tools: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        """Read-only calls whose arguments need nothing fresh: the observable state."""
        out: list[tuple[str, dict[str, Any]]] = []
        for tool in tools:
            if not is_read_only(tool):
                continue
            schema = tool.get("inputSchema") or {}
            props = schema.get("properties") or {}
            variants: list[dict[str, Any]] = [{}]
            fine = True
            for name in schema.get("required") or []:
                sub = props.get(name) or {}
                kind = self.kind(tool, name, sub)
                if sub.get("enum"):
                    vals: list[Any] = [sub["enum"][0]]
                elif kind == "path" and schema_type(sub) == "string":
                    vals = [self.root]
                elif kind == "sql":
                    vals = [f"SELECT * FROM {t}" for t in sorted(self.tables)]
                elif self.key(name, sub) == "table":
                    vals = sorted(self.tables)
                else:
                    fine = False
                    break
                variants = [{**v, name: x} for v in variants for x in vals]
            if fine:
                out += [(tool["name"], v) for v in variants]
        return out


# ------------------------------------------------------------------------------ comparison


def values(obj: Any, root: str) -> set[str]:
    """The values a caller reads: numbers, and string tokens (the folder path removed, since
    each side reports paths in its own form of the same folder)."""
    out: set[str] = set()
    if isinstance(obj, dict):
        for v in obj.values():
            out |= values(v, root)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            out |= values(v, root)
    elif isinstance(obj, bool) or obj is None:
        pass
    elif isinstance(obj, (int, float)):
        out.add(f"{round(float(obj), 2):g}")
    elif isinstance(obj, str):
        text = obj.replace(root, "")
        for tok in re.split(r"[\s,;:()\[\]{}\"'`]+", text):
            tok = tok.strip(".").lower()
            if len(tok) >= 2:
                out.add(tok)
    return out


def value_recall(real: Any, synth: Any, root: str) -> float | None:
    want = values(real, root)
    if not want:
        return None
    have = values(synth, root)
    return len(want & have) / len(want)


@dataclass
class Tally:
    calls: int = 0
    agree: int = 0
    real_errors: int = 0
    real_changes: int = 0
    reproduced: int = 0
    unchanged: int = 0
    spurious: int = 0
    recall_sum: float = 0.0
    recall_n: int = 0
    disagreements: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for k in ("calls", "agree", "real_errors", "real_changes", "reproduced", "unchanged"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.spurious += other.spurious
        self.recall_sum += other.recall_sum
        self.recall_n += other.recall_n

    def row(self) -> dict[str, Any]:
        def pct(a: float, b: int) -> float | None:
            return round(100.0 * a / b, 1) if b else None

        return {
            "calls": self.calls,
            "real_errors": self.real_errors,
            "agree_pct": pct(self.agree, self.calls),
            "real_state_changes": self.real_changes,
            "state_changes_reproduced_pct": pct(self.reproduced, self.real_changes),
            "spurious_changes_pct": pct(self.spurious, self.unchanged),
            "values_agreeing_pct": pct(self.recall_sum, self.recall_n),
        }


# ------------------------------------------------------------------------------ both sides


def _payload(res: Any) -> tuple[bool, Any]:
    err = bool(getattr(res, "is_error", False))
    data = getattr(res, "structured_content", None)
    text = " ".join(getattr(c, "text", "") or "" for c in getattr(res, "content", None) or [])
    if data is None:
        try:
            data = json.loads(text)
        except ValueError:
            try:  # servers that print Python values (`[{'id': 1}]`) answer data all the same
                data = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                data = text
    elif isinstance(data, dict) and set(data) == {"result"} and text:
        data = data["result"]
    # An answer that is only an error message is an error to the agent reading it, flagged or not.
    if not err and isinstance(data, str) and ERROR_TEXT.match(data):
        err = True
    return err, data


async def _call(client: Any, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
    try:
        res = await asyncio.wait_for(client.call_tool(name, args, raise_on_error=False), 60)
        return _payload(res)
    except Exception as exc:  # a refused call (schema, unknown tool) is an error answer
        return True, f"{type(exc).__name__}: {exc}"


async def _observe(client: Any, probes: list[tuple[str, dict[str, Any]]]) -> str:
    seen = []
    for name, args in probes:
        err, data = await _call(client, name, args)
        seen.append([name, args, err, data])
    return json.dumps(seen, sort_keys=True, default=str)


Step = tuple[str, dict[str, Any], bool, bool, Any]  # tool, args, error, state changed, result
EDIT = "<edit>"  # a step that is no tool call: the user edits a file in the folder, on both sides


def edits_files(tools: list[dict[str, Any]]) -> bool:
    """Whether a tool can create or change files: one that is not read-only, takes a path and is
    named or described as writing, creating, editing or moving."""
    verbs = {"write", "create", "edit", "move", "copy", "save", "append", "mkdir", "touch"}
    for t in tools:
        if is_read_only(t):
            continue
        text = set(_words(t["name"])) | set(_words(str(t.get("description", "")).split(".")[0]))
        props = (t.get("inputSchema") or {}).get("properties") or {}
        pathish = any(
            set(_words(a)) & {"path", "paths", "file", "files", "source", "destination"}
            for a in props
        )
        if pathish and text & verbs and "file" in " ".join(text | set(props)):
            return True
    return False


def user_edit(gen: CallGen, root: Path) -> dict[str, Any]:
    """A file the user writes between calls: a new one, or new content for one that exists."""
    existing = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                      if p.is_file() and ".git" not in p.relative_to(root).parts)  # fmt: skip
    if existing and gen.rng.random() < 0.5:
        rel = gen.rng.choice(existing)
    else:
        rel = f"{gen.fresh_word()}.txt"
    path = str(root / rel)
    if path not in gen.paths:
        gen.paths.append(path)
    return {"path": rel, "text": f"{gen.fresh_word()} {gen.fresh_word()}\n"}


def apply_edit(root: Path, args: dict[str, Any]) -> None:
    target = root / args["path"]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(args["text"])


async def run_real(
    name: str, tools: list[dict[str, Any]], ws: Path, db: Path, gen: CallGen, length: int
) -> tuple[list[Step], list[list[tuple[str, dict[str, Any]]]]]:
    """Generate and run one sequence on the real server (its answers feed the generator)."""
    from fastmcp import Client

    from weft_megamcp.sandbox import Sandbox
    from weft_megamcp.stdio_transport import command_transport
    from weft_toolspace import servers
    from weft_toolspace.settings import ToolSpaceSettings

    spec = servers.server(name)
    home = ToolSpaceSettings().server_home
    transport = command_transport(
        spec.argv(home), dict(spec.env), ws, db, sandbox=Sandbox(mode="off"),
        log_file=ws.parent / "real-server.log",
    )  # fmt: skip
    steps: list[Step] = []
    probes_at: list[list[tuple[str, dict[str, Any]]]] = []
    async with Client(transport, timeout=60) as client:
        # Tools that change state are drawn twice as often, so a sequence has state to read.
        weights = [1 if is_read_only(t) else 2 for t in tools]
        # Tools that read a folder with content but cannot change its files (version control)
        # are used beside an editor: a quarter of the steps are the user's edits, the same on
        # both sides and not scored.
        editor = any(ws.iterdir()) and not edits_files(tools)
        for _ in range(length):
            if editor and gen.rng.random() < 0.25:
                args = user_edit(gen, ws)
                apply_edit(ws, args)
                steps.append((EDIT, args, False, False, None))
                probes_at.append([])
                continue
            tool = gen.rng.choices(tools, weights)[0]
            args = gen.call(tool)
            probes = gen.probes(tools)
            before = await _observe(client, probes)
            err, data = await _call(client, tool["name"], args)
            gen.learn_result(tool, args, not err, data)
            after = await _observe(client, probes)
            steps.append((tool["name"], args, err, after != before, data))
            probes_at.append(probes)
    return steps, probes_at


async def run_synth(
    server_mod: Any, tools: list[dict[str, Any]], ws: Path, db: Path, steps: list[Step],
    probes_at: list[list[tuple[str, dict[str, Any]]]],
) -> list[Step]:  # fmt: skip
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session

    sid = f"fidelity-real-{ws.parent.name}"
    out: list[Step] = []
    try:
        with bind_session(SessionBinding(session_id=sid, db_path=db, workspace=ws)):
            async with Client(server_mod.create_server()) as client:
                for (name, args, *_), probes in zip(steps, probes_at, strict=True):
                    if name == EDIT:
                        apply_edit(ws, args)
                        out.append((name, args, False, False, None))
                        continue
                    before = await _observe(client, probes)
                    err, data = await _call(client, name, args)
                    after = await _observe(client, probes)
                    out.append((name, args, err, after != before, data))
    finally:
        release_session(sid)
    return out


def fresh_real_state(name: str, ws: Path) -> None:
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir(parents=True)
    if name == "git":
        from weft_toolspace.servers import _GIT_ENV

        env = {**os.environ, **_GIT_ENV}
        (ws / "README.md").write_text(README)
        for cmd in (
            ["git", "init", "-q", "."],
            ["git", "add", "."],
            ["git", "commit", "-qm", "init"],
        ):
            subprocess.run(cmd, cwd=ws, env=env, check=True, capture_output=True)


def _real_head(ws: Path) -> dict[str, str]:
    """The real repository's branch and commit at the start, as a state document's
    `repository` (how the imported files are checked in)."""
    from weft_toolspace.servers import _GIT_ENV

    env = {**os.environ, **_GIT_ENV}

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ws, env=env, check=True,
                              capture_output=True, text=True).stdout.strip()  # fmt: skip

    fields = git("show", "-s", "--format=%an%n%ae%n%aI%n%B", "HEAD").split("\n", 3)
    return {"branch": git("rev-parse", "--abbrev-ref", "HEAD"), "author": fields[0],
            "email": fields[1], "date": fields[2], "message": fields[3].strip()}  # fmt: skip


def fresh_synth_state(
    name: str, bundle: Path, ws: Path, db: Path, repository: dict[str, str] | None = None
) -> None:
    """The bundle's schema with no rows (the real servers start empty), plus the real initial
    files imported as a state document."""
    from weft_envsynth import import_state

    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir(parents=True)
    shutil.copyfile(bundle / "seed.sqlite", db)
    conn = sqlite3.connect(db)
    try:
        for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            if not str(t).startswith(("sqlite_", "alembic_")):
                conn.execute(f'DELETE FROM "{t}"')
        conn.commit()
    finally:
        conn.close()
    if name == "git":
        doc: dict[str, Any] = {"files": {"README.md": README}}
        if repository:
            doc["repository"] = repository
        report = import_state(bundle, doc, db_path=db, workspace=ws)
        if getattr(report, "not_imported", None):
            print(f"  git: state import left out {report.not_imported}", file=sys.stderr)


def list_tools(name: str, tmp: Path) -> list[dict[str, Any]]:
    from fastmcp import Client

    from weft_megamcp.sandbox import Sandbox
    from weft_megamcp.stdio_transport import command_transport
    from weft_toolspace import servers
    from weft_toolspace.settings import ToolSpaceSettings

    ws = tmp / "list" / "ws"
    fresh_real_state(name, ws)
    spec = servers.server(name)
    transport = command_transport(
        spec.argv(ToolSpaceSettings().server_home), dict(spec.env), ws, tmp / "list.sqlite",
        sandbox=Sandbox(mode="off"), log_file=tmp / "list.log",
    )  # fmt: skip

    async def go() -> list[dict[str, Any]]:
        async with Client(transport, timeout=60) as client:
            return [
                t.model_dump(mode="json", by_alias=True, exclude_none=True)
                for t in await client.list_tools()
            ]

    return asyncio.run(go())


def run_server(name: str, sequences: int, length: int, seed: int, tmp: Path) -> dict[str, Any]:
    from weft_core.loaders import load_spec_file
    from weft_envsynth import synthesize_spec
    from weft_envsynth.loader import import_bundle, unload_bundle

    tools = list_tools(name, tmp)
    src = tmp / f"{name}.tools.json"
    src.write_text(json.dumps(tools))
    t0 = time.perf_counter()
    spec = load_spec_file(src, name=name).spec
    res = synthesize_spec(spec, tmp / "bundles", bundle_name=f"real_{name}")
    synth_s = time.perf_counter() - t0
    if res.bundle is None:
        raise SystemExit(f"{name}: synthesis produced no bundle ({res.reason})")
    bundle = Path(res.bundle)
    server_mod = import_bundle(bundle)
    tally = Tally()
    per_tool: dict[str, Tally] = {}
    try:
        for i in range(sequences):
            run_dir = tmp / f"{name}-{i}"
            ws, db = run_dir / "ws", run_dir / "state.sqlite"
            fresh_real_state(name, ws)
            repository = _real_head(ws) if name == "git" else None
            gen = CallGen(root=str(ws), rng=random.Random(f"{seed}-{name}-{i}"))
            # The probes a step is observed with are fixed by what the real run knew then.
            real, probes_at = asyncio.run(run_real(name, tools, ws, db, gen, length))
            fresh_synth_state(name, bundle, ws, run_dir / "synth.sqlite", repository)
            synth = asyncio.run(
                run_synth(server_mod, tools, ws, run_dir / "synth.sqlite", real, probes_at)
            )
            for r, s in zip(real, synth, strict=True):
                if r[0] == EDIT:
                    continue
                one = score(r, s, str(ws))
                tally.add(one)
                per_tool.setdefault(r[0], Tally()).add(one)
                tally.disagreements += one.disagreements
    finally:
        unload_bundle(server_mod)
    return {
        "tools": len(tools),
        "synthesis_s": round(synth_s, 2),
        **tally.row(),
        "per_tool": {k: v.row() for k, v in sorted(per_tool.items())},
        "disagreements": tally.disagreements[:200],
    }


def score(real: Step, synth: Step, root: str) -> Tally:
    name, args, r_err, r_changed, r_data = real
    _, _, s_err, s_changed, s_data = synth
    t = Tally(calls=1, real_errors=int(r_err), agree=int(r_err == s_err))
    if r_changed:
        t.real_changes = 1
        t.reproduced = int(s_changed)
    else:
        t.unchanged = 1
        t.spurious = int(s_changed)
    if not r_err:
        rec = value_recall(r_data, None if s_err else s_data, root)
        if rec is not None:
            t.recall_sum, t.recall_n = rec, 1
    if r_err != s_err or (r_changed and not s_changed):
        show = json.dumps(args, default=str).replace(root, "")[:160]
        t.disagreements.append(
            f"{name}({show}): real {'error' if r_err else 'ok'}{' +state' if r_changed else ''}"
            f" {str(r_data).replace(root, '')[:120]!r} | synth {'error' if s_err else 'ok'}"
            f"{' +state' if s_changed else ''} {str(s_data).replace(root, '')[:120]!r}"
        )
    return t


# -------------------------------------------------------------------------------------- main


def available() -> dict[str, str]:
    """{server: why it cannot run} for the servers that are not installed."""
    from weft_toolspace import servers
    from weft_toolspace.settings import ToolSpaceSettings

    home = ToolSpaceSettings().server_home
    return {
        n: f"not installed under {home} (run `uv run weft-toolspace install`)"
        for n in SERVERS
        if servers.installed(n, home) is None
    }


COLS = [
    ("server", 11), ("tools", 5), ("calls", 5), ("real err", 8), ("agree%", 7),
    ("changes", 7), ("reprod.%", 8), ("spurious%", 9), ("values%", 7),
]  # fmt: skip
KEYS = [
    "tools", "calls", "real_errors", "agree_pct", "real_state_changes",
    "state_changes_reproduced_pct", "spurious_changes_pct", "values_agreeing_pct",
]  # fmt: skip


def print_table(title: str, rows: dict[str, dict[str, Any]]) -> None:
    print(title)
    print(" ".join(f"{c:>{w}}" for c, w in COLS))
    for srv, r in rows.items():
        vals = [srv, *(r.get(k) for k in KEYS)]
        print(
            " ".join(
                f"{'-' if v is None else v!s:>{w}}" for v, (_, w) in zip(vals, COLS, strict=True)
            )
        )


def measure(names: list[str], sequences: int, length: int, seed: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="weft-fidelity-real-"))
    rows: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    try:
        for n in names:
            rows[n] = run_server(n, sequences, length, seed, tmp)
            print(f"  {n}: done", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"servers": rows, "wall_s": round(time.perf_counter() - t0, 1)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--real-servers", action="store_true", help="(this mode; accepted for fidelity.py)"
    )
    ap.add_argument("--server", action="append", default=[], choices=SERVERS, help="only these")
    ap.add_argument("--sequences", type=int, default=6, help="call sequences per server")
    ap.add_argument("--length", type=int, default=12, help="calls per sequence")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the figures as JSON to FILE")
    ap.add_argument("--errors", default=None, help="write the disagreeing calls per server to FILE")
    ap.add_argument("--before", default=None, metavar="GIT_REF",
                    help="also measure weft-envsynth at GIT_REF in the same run")  # fmt: skip
    args = ap.parse_args(argv)
    missing = available()
    names = [n for n in (args.server or SERVERS) if n not in missing]
    for n, why in missing.items():
        print(f"skipping {n}: {why}", file=sys.stderr)
    if not names:
        raise SystemExit("no real server is installed (run `uv run weft-toolspace install`)")
    before = None
    common = ["--real-servers", "--sequences", str(args.sequences), "--length", str(args.length),
              "--seed", str(args.seed)] + [x for n in names for x in ("--server", n)]  # fmt: skip
    if args.before:
        sys.path.insert(0, str(Path(__file__).parent))
        import fidelity

        before = fidelity.run_before(args.before, common)
    now = measure(names, args.sequences, args.length, args.seed)
    title = (
        f"real MCP servers, {args.sequences} sequences x {args.length} calls per server "
        f"(seed {args.seed}), tools/list only, no model"
    )
    if before is not None:
        print_table(f"\n{title}: weft-envsynth at {args.before}", before["servers"])
    print_table(
        f"\n{title}: {os.environ.get('WEFT_FIDELITY_LABEL', 'weft-envsynth now')}", now["servers"]
    )
    if before is not None:
        print("\nbefore -> after")
        for n, a in now["servers"].items():
            b = before["servers"].get(n, {})
            cells = [
                f"{k.split('_')[0]} {b.get(k)} -> {a.get(k)}"
                for k in ("agree_pct", "state_changes_reproduced_pct", "values_agreeing_pct")
            ]
            print(f"  {n:>10}: " + "; ".join(cells))
    print(f"wall {now['wall_s']:.0f} s")
    if args.json:
        doc: dict[str, Any] = {
            "sequences": args.sequences, "length": args.length, "seed": args.seed,
            "wall_s": now["wall_s"],
            "servers": {n: {k: v for k, v in r.items() if k != "disagreements"} for n, r in now["servers"].items()},
        }  # fmt: skip
        if before is not None:
            doc["before"] = {"ref": args.before, "servers": before["servers"]}
        Path(args.json).write_text(json.dumps(doc, indent=1))
    if args.errors:
        Path(args.errors).write_text(
            json.dumps({n: r["disagreements"] for n, r in now["servers"].items()}, indent=1)
        )


if __name__ == "__main__":
    main()
