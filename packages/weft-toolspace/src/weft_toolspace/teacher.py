"""A workflow teacher (rules, no model; label `workflow-teacher`): a recording policy that does the
work an agent on a small project does across servers, so the mined graph has the recurring, cyclic
cross-server transitions that long walks need (RESULTS.md h16f: the random explorer's 320 calls
left a nearly acyclic graph whose kept walks all ended at a sink after 5-8 calls).

An episode is a piece of project work on a handful of components (`parser`, `scheduler`, ...)
and on the example MCPs' records (customers, tickets, orders): it writes a project note, reads it
back and stores each line's facts as memory entities and observations, writes SQLite rows from
values read elsewhere and reads them back, writes notes from query results and graph lookups,
opens a git branch per component and checks it out, commits its notes where git shares the
filesystem server's workspace (the `repo` suite: stage, review the staged diff, commit, read the
log and show a commit, then edit again), looks up the time and records it, carries
ids between the example MCPs and the notes, and revisits what it made earlier (lists the folder,
the tables, the graph or the branches, then reads, edits and re-reads an object).

It reasons over what the servers returned, not over a script: each step it reads the last result
into what it showed (`Seen`: components and ids named in it, paths, branches, hashes, rows,
zones) and chooses, at random (seeded), one of the calls that *use* a value of that result (the
data flow that data edges are mined from) or that read back what the last call changed (state
edges); its notebook (what this episode made) decides create vs. update (an entity that exists
gets observations, a row that exists is updated). After an error it lists what the failing
server has (the recovery retry edges come from). With nothing to follow, or now and then, it
opens new work or revisits old. A (tool, object) pair it already did this episode weighs little,
so an episode is different work, not one call repeated. Only one argument configuration per tool
(one node per tool), as a deliberate agent's calls are."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from weft_toolspace.episodes import record_episodes
from weft_toolspace.fill import id_shape
from weft_toolspace.graph import leaves
from weft_toolspace.models import TraceRecord

if TYPE_CHECKING:
    from weft_megamcp import MegaMCPClient
    from weft_megamcp.registry import MCPRecord

__all__ = ["LABEL", "Notebook", "Seen", "TeacherPolicy", "read_result", "teach"]

LABEL = "workflow-teacher"
# Single-word names: a name must be found again as a whole token inside paths ("parser.md"),
# branches ("feature/parser") and notes, which is how the miner sees it carried.
COMPONENTS = (
    "parser", "scheduler", "ledger", "renderer", "indexer", "gateway",
    "billing", "crawler", "tokenizer", "planner", "archiver", "notifier",
)  # fmt: skip
STATUS = ("draft", "reviewed", "blocked", "shipped", "flaky", "pending")
ZONES = ("Europe/Paris", "America/New_York", "Asia/Tokyo", "UTC", "Australia/Sydney")
TABLES = ("components", "timeline", "followups")
REAL = ("filesystem", "memory", "git", "sqlite", "time", "repo")
WORKSPACE = "/session/workspace/"
# Weight of a (tool, object) pair already done this episode, and per earlier call of a tool:
# an episode does different work, it does not run one call over and over.
DONE_WEIGHT = 0.05
TOOL_REPEAT = 0.6
# Chance of opening new work or revisiting old although something follows from the last result.
WANDER = 0.1

_TOKEN = r"(?<![\w.-]){}(?![\w-])"
_MD = re.compile(r"(?<![\w-])([\w-]+\.md)\b")
_BRANCH = re.compile(r"\bfeature/\w+")
_HASH = re.compile(r"\b[0-9a-f]{40}\b")

Action = tuple[str, str, dict[str, Any], str]  # (mcp, tool, arguments, object worked on)


@dataclass
class Seen:
    """What one result showed: the values the next call can carry."""

    subjects: list[str] = field(default_factory=list)  # components, entity and row names, ids
    ids: dict[str, list[str]] = field(default_factory=dict)  # `<x>_id` key -> values shown
    paths: list[str] = field(default_factory=list)
    branches: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    zones: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)  # short texts worth noting

    def add(self, bucket: list[str], value: str) -> None:
        if value and value not in bucket:
            bucket.append(value)


@dataclass
class Notebook:
    """What this episode made (its servers started empty): decides create vs. update."""

    files: dict[str, list[str]] = field(default_factory=dict)  # path -> lines written
    entities: set[str] = field(default_factory=set)
    tables: set[str] = field(default_factory=set)
    rows: dict[str, set[str]] = field(default_factory=dict)  # table -> names inserted
    branches: set[str] = field(default_factory=set)
    shapes: dict[str, re.Pattern[str]] = field(default_factory=dict)  # id key -> id shape
    staged: set[str] = field(default_factory=set)  # paths added since the last commit
    committed: dict[str, list[str]] = field(default_factory=dict)  # path -> lines committed


def _has_token(token: str, text: str) -> bool:
    return re.search(_TOKEN.format(re.escape(token)), text) is not None


def read_result(result: Any, notebook: Notebook) -> Seen:
    """The values a result shows, by its structure and by the shapes of ids seen before (a
    ticket id in a note read back is recognised as one)."""
    seen = Seen()
    texts = [v for _, v in leaves(result) if isinstance(v, str)]
    for path, v in leaves(result):
        key = path.rsplit(".", 1)[-1]
        if not isinstance(v, str) or not v:
            continue
        if key.endswith("_id") and len(key) > 3:
            seen.ids.setdefault(key, [])
            seen.add(seen.ids[key], v)
            seen.add(seen.subjects, v)
            if (shape := id_shape(v)) is not None:
                notebook.shapes.setdefault(key, shape)
        elif key in ("entityName", "from", "to") or (
            path.startswith("entities.") and key == "name"
        ):
            seen.add(seen.subjects, v)
        elif key == "timezone":
            seen.add(seen.zones, v)
        elif (
            key in ("day_of_week", "subject", "title", "stage", "status", "priority")
            or ".observations." in path
            or ".addedObservations." in path
        ):
            seen.add(seen.details, v)
    if isinstance(result, list):
        for row in result:
            if isinstance(row, dict) and isinstance(row.get("name"), str):
                name = row["name"]
                if "note" in row or ("id" in row and len(row) > 1 and "type" not in row):
                    seen.add(seen.subjects, name)
                    if isinstance(row.get("note"), str):
                        seen.add(seen.details, row["note"])
                elif set(row) == {"name"}:
                    seen.add(seen.tables, name)
    for text in texts:
        for c in COMPONENTS:
            if _has_token(c, text):
                seen.add(seen.subjects, c)
        for m in _MD.findall(text):
            seen.add(seen.paths, m)
        for b in _BRANCH.findall(text):
            seen.add(seen.branches, b)
        for h in _HASH.findall(text):
            seen.add(seen.hashes, h)
        for key, shape in notebook.shapes.items():
            for token in shape.findall(text):
                seen.ids.setdefault(key, [])
                seen.add(seen.ids[key], token)
                seen.add(seen.subjects, token)
        for line in text.splitlines():  # a note line "subject: detail"
            subject, sep, detail = line.partition(": ")
            if sep and subject.strip() in seen.subjects and 2 < len(detail) < 60:
                seen.add(seen.details, detail.strip())
    return seen


def _note_path(name: str, seen: Seen) -> str:
    """One note per component (`parser.md`), one per kind of record (`tickets.md` for ticket
    ids, `commits.md`): a project's few files, each read back and edited many times."""
    if name in COMPONENTS:
        return f"{name}.md"
    kind = next((k for k, v in seen.ids.items() if name in v), "")
    if kind:
        return f"{kind.removesuffix('_id')}s.md"
    return "commits.md" if _HASH.fullmatch(name) else "notes.md"


def _q(text: str) -> str:
    return text.replace("'", "")


class TeacherPolicy:
    """Chooses the next (mcp, tool, arguments) from what the last result showed and what this
    episode made; same interface as `explore.ExplorerPolicy`."""

    def __init__(self, tools: dict[str, list[tuple[str, dict[str, Any]]]], seed: int) -> None:
        self.tools = tools
        self.rng = random.Random(seed)
        self.where: dict[str, str] = {}  # tool -> mcp (real servers first)
        for mcp in sorted(tools, key=lambda m: (m not in REAL, m)):
            for name, _ in tools[mcp]:
                self.where.setdefault(name, mcp)
        self.book = Notebook()
        self.seen = Seen()
        self.made: dict[str, Any] = {}  # the last call's arguments (what it made or touched)
        self.result: Any = None  # the last call's result
        self.last: tuple[str, str, bool] | None = None
        self.done: set[tuple[str, str]] = set()
        self.calls: Counter[str] = Counter()
        # git sees the files the filesystem server writes only when one suite serves both.
        self.shared_repo = "write_file" in self.where and self.where.get(
            "write_file"
        ) == self.where.get("git_add")

    # -- choosing -----------------------------------------------------------------------------

    def next_call(self) -> tuple[str, str, dict[str, Any]]:
        r = self.rng
        pool: list[Action] = []
        if self.last is not None and not self.last[2]:
            pool = self._recover(self.last[0])
        elif self.last is not None:
            pool = self._follow()
        if not pool or r.random() < WANDER:
            pool = self._open() or pool
        weights = [self._weight(a) for a in pool]
        mcp, tool, args, obj = r.choices(pool, weights)[0]
        self.done.add((tool, obj))
        self.calls[tool] += 1
        return mcp, tool, args

    def _weight(self, action: Action) -> float:
        mcp, tool, _, obj = action
        w = TOOL_REPEAT ** self.calls[tool]
        if (tool, obj) in self.done:
            w *= DONE_WEIGHT
        if self.last is not None and mcp != self.last[0]:
            w *= 1.5  # carrying a value to another server is the cross-environment work
        return w

    def _can(self, tool: str) -> bool:
        return tool in self.where

    def _act(self, tool: str, args: dict[str, Any], obj: str) -> Action:
        """A call of `tool` on its server ('' when no server of the episode has it: dropped)."""
        mcp = self.where.get(tool, "")
        if tool.startswith("git_"):
            args = {"repo_path": ".", **args}
        return mcp, tool, args, obj

    def _detail(self) -> str:
        return self.rng.choice(self.seen.details or list(STATUS))

    def _note(self, subjects: list[str]) -> str:
        """Status lines, one per subject (`parser: draft`): what a project note holds, and a line
        a later edit can find again (an edit names the exact line it replaces)."""
        return "\n".join(f"{s}: {self.rng.choice(STATUS)}" for s in subjects)

    def _follow(self) -> list[Action]:
        """Calls that use a value the last result showed, or read back what the last call
        changed."""
        s, book, made, r = self.seen, self.book, self.made, self.rng
        out: list[Action] = []
        _, last, _ = self.last or ("", "", True)
        subjects = s.subjects[:]
        r.shuffle(subjects)
        subjects = subjects[:3]
        # Looked up only in answers that show the entity exists (a lookup of a name read
        # elsewhere, or of a relation's other end, may find nothing and lead nowhere).
        memory_result = last in ("create_entities", "add_observations", "read_graph", "open_nodes")
        paths = s.paths or ([made["path"]] if last in ("write_file", "edit_file") else [])
        for p in paths[:2]:
            out += [
                self._act("read_text_file", {"path": p}, p),
                self._act("read_multiple_files", {"paths": [p]}, p),
            ]
            # An edit names the exact line it replaces: one the agent has just read.
            shown = " ".join(x for _, x in leaves(self.result) if isinstance(x, str))
            lines = [x for x in book.files.get(p, []) if x.partition(": ")[2] in STATUS]
            lines = [x for x in lines if last.startswith("read_") and x in shown]
            if lines:
                line = r.choice(lines)
                new = f"{line.partition(': ')[0]}: {r.choice([x for x in STATUS if x not in line])}"
                out.append(
                    self._act(
                        "edit_file", {"path": p, "edits": [{"oldText": line, "newText": new}]}, p
                    )
                )
        for name in subjects:
            if name in book.entities:
                out += [
                    self._act("add_observations", {"observations": [
                        {"entityName": name, "contents": [f"{self._detail()} {self._stamp()}".strip()]}
                    ]}, name),
                ]  # fmt: skip
                if memory_result:
                    out.append(self._act("open_nodes", {"names": [name]}, name))
                others = sorted(book.entities - {name})
                if others:
                    rel = {"from": name, "to": r.choice(others), "relationType": "depends_on"}
                    out.append(self._act("create_relations", {"relations": [rel]}, name))
            else:
                kind = next((k for k, v in s.ids.items() if name in v), "_component")
                ent = {
                    "name": name,
                    "entityType": kind.removesuffix("_id").strip("_"),
                    "observations": [self._detail()],
                }
                out.append(self._act("create_entities", {"entities": [ent]}, name))
            if memory_result:
                out.append(self._act("search_nodes", {"query": name}, name))
            # A note on the subject names what else is in play (other subjects of the result,
            # entities made earlier), so reading it back shows more than one thing to act on.
            related = sorted((set(s.subjects) | book.entities) - {name})
            lines = [name, *r.sample(related, min(2, len(related)))]
            out.append(
                self._act(
                    "write_file", {"path": _note_path(name, s), "content": self._note(lines)}, name
                )
            )
            for table in sorted(book.tables)[:2]:
                if name in book.rows.get(table, set()):
                    q = f"UPDATE {table} SET note = '{_q(self._detail())}' WHERE name = '{name}'"
                else:
                    q = f"INSERT INTO {table} (name, note) VALUES ('{name}', '{_q(self._detail())}')"
                out.append(self._act("write_query", {"query": q}, f"{table}:{name}"))
            if name in COMPONENTS and f"feature/{name}" not in book.branches:
                out.append(self._act("git_create_branch", {"branch_name": f"feature/{name}"}, name))
        for b in s.branches or ([made["branch_name"]] if last == "git_create_branch" else []):
            out += [
                self._act("git_checkout", {"branch_name": b}, b),
                self._act("git_diff", {"target": b}, b),
            ]
        if last in ("git_create_branch", "git_checkout"):
            out += [self._act("git_branch", {"branch_type": "local"}, made["branch_name"])]
            out += [self._act("git_status", {}, made["branch_name"])]
        if self.shared_repo:
            out += self._commit_work(paths)
        for h in s.hashes[:1]:
            out.append(self._act("git_show", {"revision": h}, h))
            if last == "git_show":
                ent = {"name": h, "entityType": "commit", "observations": ["reviewed"]}
                out.append(self._act("create_entities", {"entities": [ent]}, h))
        for z in s.zones[:1]:
            # Record the time against something the episode made (a revisit): an observation,
            # a timeline row, a note; or convert it for a colleague elsewhere.
            stamp = " ".join([z, *[d for d in s.details if d.endswith("day")][:1]])
            for name in r.sample(sorted(book.entities), min(2, len(book.entities))):
                obs = [{"entityName": name, "contents": [f"checked {stamp}"]}]
                out.append(self._act("add_observations", {"observations": obs}, f"{name}@{z}"))
            name = r.choice(COMPONENTS)
            for table in sorted(book.tables)[:2]:
                q = f"INSERT INTO {table} (name, note) VALUES ('{name}', 'checked {stamp}')"
                out.append(self._act("write_query", {"query": q}, f"{table}:{name}@{z}"))
            if book.files:
                p = r.choice(sorted(book.files))
                line = f"{p.removesuffix('.md')}: checked {stamp}"
                out.append(self._act("write_file", {"path": p, "content": line}, f"{p}@{z}"))
            other = r.choice([x for x in ZONES if x != z])
            hhmm = f"{r.randint(8, 18):02d}:{r.choice((0, 30)):02d}"
            args = {"source_timezone": z, "time": hhmm, "target_timezone": other}
            out.append(self._act("convert_time", args, z))
            if last == "convert_time":
                out.append(self._act("get_current_time", {"timezone": z}, z))
        for t in s.tables:
            out.append(self._act("read_query", {"query": f"SELECT * FROM {t}"}, t))
        if last in ("write_query", "create_table"):  # read back what the write changed
            changed = self._table_of(made)
            if changed:
                t = changed
                out.append(self._act("read_query", {"query": f"SELECT * FROM {t}"}, t))
                if last == "create_table" and s.subjects == []:
                    name = r.choice(COMPONENTS)
                    q = f"INSERT INTO {t} (name, note) VALUES ('{name}', '{r.choice(STATUS)}')"
                    out.append(self._act("write_query", {"query": q}, f"{t}:{name}"))
        out += self._examples()
        return [a for a in out if self._can(a[1]) and a[0] in self.tools]

    def _commit_work(self, paths: list[str]) -> list[Action]:
        """Version control of the notes (git and the filesystem server share one folder): a
        written or edited note is looked at and staged, a staged change reviewed and committed
        with a message naming what it holds, a commit read back from the log."""
        s, book, r = self.seen, self.book, self.rng
        _, last, _ = self.last or ("", "", True)
        out: list[Action] = []
        changed = [p for p in paths if book.files.get(p) != book.committed.get(p)]
        if last in ("write_file", "edit_file", "git_status", "git_diff_unstaged"):
            for p in changed[:2]:
                out.append(self._act("git_add", {"files": [p]}, f"add:{p}"))
            if last in ("write_file", "edit_file"):
                out.append(self._act("git_status", {}, f"status:{'+'.join(changed)}"))
                if any(p in book.committed for p in changed):
                    out.append(self._act("git_diff_unstaged", {}, f"diff:{'+'.join(changed)}"))
        if book.staged and last in ("git_add", "git_diff_staged", "git_status"):
            if last != "git_diff_staged":
                staged = "+".join(sorted(book.staged))
                out.append(self._act("git_diff_staged", {}, f"staged:{staged}"))
            # The message names what the last result showed of the change (a diff's subjects).
            subjects = [x for x in s.subjects if x in COMPONENTS] or [
                p.removesuffix(".md") for p in sorted(book.staged)
            ]
            message = f"{r.choice(subjects)}: {r.choice(STATUS)} notes"
            out.append(self._act("git_commit", {"message": message}, f"commit:{message}"))
        if last == "git_commit":
            out.append(self._act("git_log", {"max_count": 3}, "log"))
        return out

    def _stamp(self) -> str:
        """A time or place the last result showed, kept with an observation (it carries it)."""
        return " ".join(
            [*self.seen.zones[:1], *[d for d in self.seen.details if d.endswith("day")][:1]]
        )

    @staticmethod
    def _table_of(args: dict[str, Any]) -> str | None:
        m = re.search(r"(?:TABLE|INTO|UPDATE|FROM) (\w+)", str(args.get("query", "")))
        return m.group(1) if m else None

    def _examples(self) -> list[Action]:
        """Example-MCP tools whose required ids the last result showed; their text arguments
        name a subject of that result (a ticket about the parser, a deal for a customer)."""
        out: list[Action] = []
        for mcp, tools in self.tools.items():
            if mcp in REAL:
                continue
            for name, schema in tools:
                required = list(schema.get("required", []))
                if name.startswith("delete_") or not required:
                    continue
                args: dict[str, Any] = {}
                obj = ""
                for arg in required:
                    prop = schema.get("properties", {}).get(arg, {})
                    if arg.endswith("_id"):
                        values = self.seen.ids.get(arg, [])
                        if not values:
                            break
                        args[arg] = self.rng.choice(values[:4])
                        obj = obj or args[arg]
                    else:
                        args[arg] = self._plain(arg, prop)
                else:
                    # A call carries an id the result showed, or names one of its subjects in
                    # a text argument (`_plain`); with neither it would follow nothing.
                    if obj or self.seen.subjects:
                        out.append((mcp, name, args, obj or name))
        return out

    def _plain(self, arg: str, prop: dict[str, Any]) -> Any:
        r = self.rng
        if "enum" in prop:
            return r.choice(prop["enum"])
        kind, fmt = prop.get("type"), prop.get("format")
        if fmt == "email":
            return f"{r.choice(COMPONENTS)}.{r.randint(100, 999)}@example.org"
        if kind == "number":
            return r.choice((25.0, 120.5, 480.0))
        if kind == "integer":
            return r.randint(1, 5)
        subject = r.choice(self.seen.subjects or list(COMPONENTS))
        return f"{subject} {self._detail()}" if kind in (None, "string") else r.choice(STATUS)

    def _recover(self, mcp: str) -> list[Action]:
        """After an error: look at what the failing server has (another tool of it)."""
        listing = {
            "filesystem": ("list_directory", {"path": "."}),
            "memory": ("read_graph", {}),
            "sqlite": ("list_tables", {}),
            "git": ("git_branch", {"branch_type": "local"}),
            "repo": ("git_status", {}),
            "time": ("get_current_time", {"timezone": "UTC"}),
        }
        if mcp in listing:
            tool, args = listing[mcp]
            return [self._act(tool, args, "listing")] if self._can(tool) else []
        return [
            (mcp, n, {}, n)
            for n, s in self.tools.get(mcp, [])
            if not s.get("required") and n.startswith("list_")
        ]

    def _open(self) -> list[Action]:
        """New work (a project note, a table, a branch listing, the clock, a record list) or a
        revisit of what the episode made (listing its files, tables, graph)."""
        r = self.rng
        names = r.sample(COMPONENTS, 3)
        out: list[Action] = [
            self._act("write_file", {"path": f"{names[0]}.md", "content": self._note(names)}, names[0]),
            self._act("get_current_time", {"timezone": r.choice(ZONES)}, "clock"),
            self._act("git_log", {}, "log"),
        ]  # fmt: skip
        missing = [t for t in TABLES if t not in self.book.tables]
        if missing:
            t = r.choice(missing)
            q = f"CREATE TABLE {t} (id INTEGER PRIMARY KEY, name TEXT, note TEXT)"
            out.append(self._act("create_table", {"query": q}, t))
        if self.book.files:
            out.append(self._act("list_directory", {"path": "."}, "listing"))
        if self.book.entities:
            out.append(self._act("read_graph", {}, "listing"))
        if self.book.tables:
            out.append(self._act("list_tables", {}, "listing"))
        if self.book.branches:
            out.append(self._act("git_branch", {"branch_type": "local"}, "listing"))
        if self.shared_repo and self.book.files:
            out.append(self._act("git_status", {}, "listing"))
        for mcp, tools in self.tools.items():
            if mcp not in REAL:
                out += [
                    (mcp, n, {}, n)
                    for n, s in tools
                    if not s.get("required") and n.startswith("list_")
                ]
        return [a for a in out if self._can(a[1]) and a[0] in self.tools]

    # -- reading ------------------------------------------------------------------------------

    def observe(self, mcp: str, tool: str, args: dict[str, Any], result: Any, ok: bool) -> None:
        self.last = (mcp, tool, ok)
        self.made = args
        self.result = result
        if not ok:
            self.seen = Seen()
            return
        book = self.book
        if tool == "write_file":
            book.files[args["path"]] = str(args["content"]).splitlines()
        elif tool == "edit_file":
            lines = book.files.get(args["path"], [])
            for e in args.get("edits", []):
                lines = [e["newText"] if x == e["oldText"] else x for x in lines]
            book.files[args["path"]] = lines
        elif tool == "create_entities":
            book.entities |= {e["name"] for e in args["entities"]}
        elif tool == "create_table":
            t = self._table_of(args)
            if t:
                book.tables.add(t)
        elif tool == "write_query":
            t = self._table_of(args)
            m = re.search(r"VALUES \('([^']+)'", str(args.get("query", "")))
            if t and m:
                book.rows.setdefault(t, set()).add(m.group(1))
        elif tool == "git_create_branch":
            book.branches.add(args["branch_name"])
        elif tool == "git_add" and "staged successfully" in str(result):
            book.staged |= set(args["files"])
        elif tool == "git_commit":
            for p in book.staged:
                book.committed[p] = list(book.files.get(p, []))
            book.staged = set()
        self.seen = read_result(result, book)


async def teach(
    client: MegaMCPClient,
    records: list[MCPRecord],
    *,
    episodes: int,
    steps: int,
    seed: int = 0,
    servers_per_episode: int = 4,
    on_episode: Callable[[TraceRecord], None] | None = None,
) -> list[TraceRecord]:
    """Record `episodes` with the workflow teacher (a fresh notebook each episode)."""
    return await record_episodes(
        client,
        records,
        lambda menu, ep_seed: TeacherPolicy(menu, seed=ep_seed),
        label="teach",
        episodes=episodes,
        steps=steps,
        seed=seed,
        servers_per_episode=servers_per_episode,
        on_episode=on_episode,
    )
