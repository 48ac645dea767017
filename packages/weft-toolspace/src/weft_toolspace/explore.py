"""A programmatic exploring policy (rules, no model; label `programmatic-explorer`) that drives real
MCP servers the way a goal-directed agent does, so MegaMCP's ledger records real executions (the
trace corpus M).

It reads every result: rules over the output's structure turn it into facts (a listing's files and
folders, a knowledge graph's entities and observations, a catalogue's tables, a query's rows and
columns, a log's commit hashes, a branch list, a clock's time zones). It reads every tool's input
schema: each required argument gets a role from its name and the tool's verb (`path` of a
`write_*` tool names something new, of a `read_*` tool an existing file; `query` of a SQL tool is
composed from known tables and values). Each step it then prefers a tool that *uses what the last
call showed or made* (a file it listed, an entity it created, a row it queried, a hash it logged),
on any server of the episode; after an error it turns to a different tool of that server that can
discover what was missing (the recovery that retry edges are mined from); with nothing to follow
it creates or discovers something. It sometimes guesses a name it has not seen (a file, a table, a
branch), as agents do, and keeps the error. Only required arguments are given, so each tool is one
argument configuration, as a deliberate agent's calls are."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from weft_toolspace.episodes import record_episodes
from weft_toolspace.fill import id_shape
from weft_toolspace.models import TraceRecord

if TYPE_CHECKING:
    from weft_megamcp import MegaMCPClient
    from weft_megamcp.registry import MCPRecord

LABEL = "programmatic-explorer"
WORDS = ("alpha", "budget", "harbor", "lantern", "meadow", "orbit", "pepper", "quartz", "river")
PEOPLE = ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Katherine Johnson", "Linus Pauling")
ZONES = ("Europe/Paris", "America/New_York", "Asia/Tokyo", "UTC", "Australia/Sydney")
TOPICS = ("engines", "compilers", "ciphers", "orbits", "chemistry", "budgets")

# Fact kinds a result can show and an argument can take.
PATH, DIR, ENTITY, OBS, TABLE, ROW = "path", "dir", "entity", "observation", "table", "row"
LINE, REV, BRANCH, ZONE, CLOCK = "line", "revision", "branch", "zone", "clock"
# Any object id a result showed (`id:ticket_id`, `id:customer_id`, ...): a note can name one.
ANY_ID = "id:*"
TEXTUAL = (ENTITY, OBS, ROW, LINE, ANY_ID)  # what a note, an insight or a row can be written from
_UNDO = ("delete", "reset", "move")
_READ_VERBS = ("list", "read", "get", "search", "open", "describe", "show", "status", "log")


@dataclass(frozen=True)
class Fact:
    kind: str
    value: Any
    scope: str = ""  # the table of a row, the folder of a path
    made: bool = False  # from the call's own arguments (what it made), not from its result


# A value is put into each tool once and into at most USES calls: an agent takes a ticket it
# opened through comment, assignment and closing (different work on one object), but does not
# convert the same time zone back and forth. (Was: any two calls, which ended an object's
# lifecycle after two steps and left the recorded graph without the edges between them.)
USES = 4
# Weight factor per earlier call of a tool in this episode: an episode is a piece of work, not
# one tool run over and over (the corpus had `create_ticket` after `create_ticket`, which made
# the mined graph's only long walks self-loops).
EPISODE_REPEAT = 0.3


def _fkey(f: Fact) -> str:
    return f"{f.kind}:{f.value!r}"


@dataclass
class Memory:
    facts: list[Fact] = field(default_factory=list)
    fresh: list[Fact] = field(default_factory=list)  # what the last call showed or made
    # How often each fact was put into a call, and into which tools.
    used: Counter[str] = field(default_factory=Counter)
    applied: set[tuple[str, str]] = field(default_factory=set)

    def open_(self, tool: str | None = None) -> list[Fact]:
        """Fresh facts still to be used (by `tool`: not yet put into it)."""
        return [
            f
            for f in self.fresh
            if self.used[_fkey(f)] < USES and (tool is None or (_fkey(f), tool) not in self.applied)
        ]

    def add(self, fact: Fact) -> None:
        if fact not in self.facts:
            self.facts.append(fact)
        if fact not in self.fresh:
            self.fresh.append(fact)

    def of(self, kind: str, *, fresh: bool = False) -> list[Fact]:
        return [f for f in (self.fresh if fresh else self.facts) if f.kind == kind]


def _verb(tool: str) -> str:
    return tool.removeprefix("git_").split("_")[0]


def reads_only(tool: str) -> bool:
    return _verb(tool) in _READ_VERBS or tool in ("git_branch", "directory_tree")


def role(tool: str, arg: str) -> str | None:
    """What a required argument takes, from its name and the tool's verb (None: a plain value)."""
    verb = _verb(tool)
    if arg == "path":
        if verb in ("write", "create"):
            return "new-dir" if "directory" in tool else "new-file"
        return DIR if verb in ("list", "search") or tool == "directory_tree" else PATH
    return {
        "paths": PATH,
        "source": PATH,
        "destination": "new-file",
        "content": "text",
        "edits": "edits",
        "pattern": "pattern",
        "entities": "new-entities",
        "names": ENTITY,
        "entityNames": ENTITY,
        "observations": "observations",
        "deletions": "deletions",
        "relations": "relations",
        "query": (
            {"read": "sql-read", "write": "sql-write", "create": "sql-create"}.get(verb, "sql")
            if tool.endswith(("_query", "_table"))
            else "search"
        ),
        "table_name": TABLE,
        "insight": "text",
        "repo_path": "repo",
        "files": "git-files",
        "message": "text",
        "revision": REV,
        "target": BRANCH,
        "branch_name": "new-branch" if verb == "create" else BRANCH,
        "branch_type": "branch-type",
        "timezone": ZONE,
        "source_timezone": ZONE,
        "target_timezone": "other-zone",
        "time": CLOCK,
    }.get(arg, _identifier(arg))


def _identifier(arg: str) -> str | None:
    """An `<object>_id` argument names an object a result showed under the same key (the example
    MCPs' `customer_id`, `ticket_id`): its role is that key, so ids flow within and across servers."""
    return f"id:{arg}" if arg.endswith("_id") and len(arg) > 3 else None


def _is(kind: str, wanted: str) -> bool:
    return kind == wanted or (wanted == ANY_ID and kind.startswith("id:"))


def _consumes(r: str) -> tuple[str, ...]:
    return (r,) if r.startswith("id:") else _CONSUMES.get(r, ())


def _needs(r: str) -> str | None:
    return r if r.startswith("id:") else _NEEDS.get(r)


# Which fact kinds a role consumes (a tool "follows" the last call if it consumes a fresh fact).
_CONSUMES = {
    PATH: (PATH,),
    DIR: (DIR,),
    ENTITY: (ENTITY,),
    TABLE: (TABLE,),
    REV: (REV,),
    BRANCH: (BRANCH,),
    ZONE: (ZONE,),
    CLOCK: (CLOCK,),
    "observations": (ENTITY, OBS, ROW, LINE, ANY_ID),
    "sql-read": (TABLE, ROW),
    "sql-write": (TABLE, *TEXTUAL),
    "new-entities": (ROW, LINE, ANY_ID),
    "relations": (ENTITY,),
    "deletions": (OBS,),
    "edits": (LINE,),
    "text": TEXTUAL,
    "search": (ENTITY, ROW),
    "git-files": (PATH,),
}


# Roles that name an existing object, and the fact kind that must be known for them.
_NEEDS = {
    PATH: PATH,
    ENTITY: ENTITY,
    TABLE: TABLE,
    REV: REV,
    BRANCH: BRANCH,
    "sql-read": TABLE,
    "sql-write": TABLE,
    "deletions": OBS,
    "edits": LINE,
    "relations": ENTITY,
    "observations": ENTITY,
}


def _leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [
            x for i, v in enumerate(value) for x in _leaves(v, f"{path}.{i}" if path else str(i))
        ]
    return [(path, value)]


_HEX = re.compile(r"\b(?:[Cc]ommit:? )([0-9a-f]{7,40})\b")
_LISTED = re.compile(r"^\[(FILE|DIR)\] (\S+)$", re.M)
_FROM = re.compile(r"\bFROM (\w+)", re.I)


def observe(memory: Memory, tool: str, args: dict[str, Any], result: Any, ok: bool) -> None:
    """Read what a call showed (its result) and made (its arguments) into facts."""
    memory.fresh = []
    if not ok:
        return
    text = result if isinstance(result, str) else ""
    folder = str(args.get("path", "."))
    for kind, name in _LISTED.findall(text):
        full = name if folder in (".", "") else f"{folder.rstrip('/')}/{name}"
        memory.add(Fact(PATH if kind == "FILE" else DIR, full))
    for h in _HEX.findall(text):
        memory.add(Fact(REV, h))
    if tool == "git_branch":
        for line in text.splitlines():
            if line.strip():
                memory.add(Fact(BRANCH, line.strip(" *")))
    if tool.startswith("read_") and "file" in tool and text:
        memory.add(Fact(PATH, folder))
        for line in text.splitlines():
            if len(line.strip()) > 3:
                memory.add(Fact(LINE, line.strip()))
    for p, leaf in _leaves(result):
        key = p.rsplit(".", 1)[-1]
        if not isinstance(leaf, str) or not leaf:
            continue
        if (p.startswith("entities.") and key == "name") or key in ("from", "to"):
            memory.add(Fact(ENTITY, leaf))
        elif p.startswith("entities.") and ".observations." in p:
            memory.add(Fact(OBS, leaf, scope=p.split(".")[1]))
        elif key == "timezone":
            memory.add(Fact(ZONE, leaf))
        elif key == "datetime" and "T" in leaf:
            memory.add(Fact(CLOCK, leaf[11:16]))
    for p, leaf in _leaves(result):
        key = p.rsplit(".", 1)[-1]
        if _identifier(key) and isinstance(leaf, str | int) and not isinstance(leaf, bool) and leaf:
            memory.add(Fact(f"id:{key}", leaf))
    _known_ids(memory, args, result)
    if isinstance(result, list) and all(isinstance(r, dict) for r in result):
        if tool == "list_tables":
            for r in result:
                memory.add(Fact(TABLE, str(r.get("name"))))
        elif tool == "read_query":
            m = _FROM.search(str(args.get("query", "")))
            for r in result:
                if isinstance(r.get("name"), str):
                    memory.add(Fact(ROW, r, scope=m.group(1) if m else ""))
    # What the call made is at hand for the next call too (a created table, file, entity, branch).
    if tool == "write_file" and isinstance(args.get("path"), str):
        memory.add(Fact(PATH, args["path"], made=True))
    if tool == "create_directory" and isinstance(args.get("path"), str):
        memory.add(Fact(DIR, args["path"], made=True))
    made = re.search(r"(?:CREATE TABLE|INSERT INTO|UPDATE) (\w+)", str(args.get("query", "")))
    if made:
        memory.add(Fact(TABLE, made.group(1), made=True))
    for e in args.get("entities") or []:
        if isinstance(e, dict) and isinstance(e.get("name"), str):
            memory.add(Fact(ENTITY, e["name"], made=True))
    if tool == "git_create_branch" and isinstance(args.get("branch_name"), str):
        memory.add(Fact(BRANCH, args["branch_name"], made=True))


def _known_ids(memory: Memory, args: dict[str, Any], result: Any) -> None:
    """Ids of a kind already known that a result shows inside text or under another key: a
    ticket id in a note read back from a file, a memory observation, a row or a commit message
    (the agent recognises `TIC-0007` as a ticket id because tickets' ids look like that). An id
    the call was given (echoed back) is not news."""
    shapes: dict[str, dict[str, re.Pattern[str]]] = {}
    for f in memory.facts:
        p = id_shape(f.value) if f.kind.startswith("id:") and isinstance(f.value, str) else None
        if p is not None:
            shapes.setdefault(f.kind, {})[p.pattern] = p
    if not shapes:
        return
    given = " ".join(str(v) for _, v in _leaves(args))
    texts = [v for _, v in _leaves(result) if isinstance(v, str)]
    for kind, pats in shapes.items():
        for p in pats.values():
            echoed = set(p.findall(given))
            for token in (t for text in texts for t in p.findall(text)):
                if token not in echoed:
                    memory.add(Fact(kind, token))


class ExplorerPolicy:
    """Chooses the next (mcp, tool, arguments) from the tools' input schemas and what earlier
    results showed."""

    def __init__(
        self,
        tools: dict[str, list[tuple[str, dict[str, Any]]]],
        seed: int,
        guess: float = 0.08,
        habits: Counter[str] | None = None,
    ) -> None:
        self.tools = tools  # mcp id -> [(tool name, input schema)]
        # Tools that worked before are preferred among equals (an agent's habits, kept across
        # episodes when the caller shares the counter).
        self.habits: Counter[str] = habits if habits is not None else Counter()
        self.rng = random.Random(seed)
        self.memory = Memory()
        self.guess = guess
        self.last: tuple[str, str, bool] | None = None  # (mcp, tool, ok)
        self.recent: list[str] = []
        self.servers: list[str] = []
        self.previous: tuple[str, str, dict[str, Any]] | None = None
        self.episode: Counter[str] = Counter()  # calls per tool in this episode
        self.tool = ""  # the tool whose arguments are being made
        self.noted = ""  # the id kind the last snippet named ('' : none)

    def _roles(self, tool: str, schema: dict[str, Any]) -> list[str]:
        return [r for a in schema.get("required", []) if (r := role(tool, a)) is not None]

    def follows(self, tool: str, schema: dict[str, Any]) -> bool:
        """Whether the tool can use a fact the last call showed or made."""
        fresh = {f.kind for f in self.memory.open_(tool)}
        wanted = [k for r in self._roles(tool, schema) for k in _consumes(r)]
        return any(_is(f, k) for f in fresh for k in wanted)

    def fillable(self, tool: str, schema: dict[str, Any]) -> bool:
        """Every reference argument has a known fact (a guess is made elsewhere, on purpose)."""
        return all(self.memory.of(_needs(r) or r) for r in self._refs(tool, schema))

    def _weight(self, mcp: str, tool: str, schema: dict[str, Any]) -> float:
        """How much a goal-directed agent wants this call now: using what the last call showed
        beats using what it made; carrying a value to another server is what cross-environment
        work is; destroying or undoing is rarely the point. (h16f tried weighting "acting on an
        object the last call showed" twice "mentioning it in a text": the seed-7 corpus then
        spread over more distinct pairs and its pruned graph admitted no walk; without it, 8 of 8
        walks were kept. RESULTS.md, h16f.)"""
        fresh_shown = {f.kind for f in self.memory.open_(tool) if not f.made}
        uses = {k for r in self._roles(tool, schema) for k in _consumes(r)}
        w = 3.0 if any(_is(f, k) for f in fresh_shown for k in uses) else 1.0
        w *= EPISODE_REPEAT ** self.episode[tool]
        if self.last is not None and mcp != self.last[0]:
            w *= 1.5
        if _verb(tool) in _UNDO:
            w *= 0.15
        return w * (1.0 + min(self.habits[tool], 30) / 3)

    def next_call(self) -> tuple[str, str, dict[str, Any]]:
        """The next call; never the very call just made (an agent does not ask twice)."""
        call = self._next_call()
        for _ in range(8):
            if call != self.previous:
                break
            self.recent.pop()
            self.servers.pop()
            self.episode[call[1]] -= 1
            call = self._next_call()
        self.previous = call
        return call

    def _next_call(self) -> tuple[str, str, dict[str, Any]]:
        r = self.rng
        flat = [(m, t, s) for m, ts in self.tools.items() for t, s in ts]
        usable = [c for c in flat if self.fillable(c[1], c[2]) and self.recent[-2:] != [c[1]] * 2]
        last3 = self.servers[-3:]
        stuck = last3[0] if len(last3) == 3 and len(set(last3)) == 1 else None
        if stuck is not None and any(c[0] != stuck for c in usable):
            # Three calls on one server in a row: carry the work elsewhere (no endless loops).
            usable = [c for c in usable if c[0] != stuck]
        if self.last is not None and not self.last[2] and self.last[0] != stuck:
            # Recovery: another tool of the failing server that needs nothing it lacks.
            mcp, failed, _ = self.last
            options = [c for c in usable if c[0] == mcp and c[1] != failed and reads_only(c[1])]
            if options and r.random() < 0.85:
                return self._make(r.choices(options, [self._weight(*c) for c in options])[0])
        following = [c for c in usable if self.follows(c[1], c[2])]
        if following and r.random() < 0.9:
            return self._make(r.choices(following, [self._weight(*c) for c in following])[0])
        guessing = [c for c in flat if c not in usable]
        if guessing and r.random() < self.guess:
            return self._make(r.choice(guessing))
        # Nothing to follow: open new work on some server (servers first, so a server with many
        # tools does not crowd out the others): make something, or look at what is there.
        mcp = r.choice(sorted({c[0] for c in usable} or {c[0] for c in flat}))
        opening = [c for c in usable or flat if c[0] == mcp and not self._refs(c[1], c[2])]
        pool = opening or [c for c in usable or flat if c[0] == mcp]
        weights = [
            (2.0 if _verb(c[1]) in ("write", "create") else 1.0) * self._weight(*c) for c in pool
        ]
        return self._make(r.choices(pool, weights)[0])

    def _refs(self, tool: str, schema: dict[str, Any]) -> list[str]:
        """Roles that must name something that exists (a tool without any opens new work)."""
        return [x for x in self._roles(tool, schema) if _needs(x) is not None]

    def _make(self, choice: tuple[str, str, dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
        mcp, tool, schema = choice
        self.tool = tool
        args: dict[str, Any] = {}
        for name in schema.get("required", []):
            args[name] = self._value(tool, name, schema.get("properties", {}).get(name, {}))
        self.recent.append(tool)
        self.servers.append(mcp)
        self.episode[tool] += 1
        return mcp, tool, args

    def _fact(self, *kinds: str) -> Fact | None:
        """A fact of one of `kinds`, preferably one the last call showed (that is the data flow)."""
        fresh = [f for f in self.memory.open_(self.tool) if any(_is(f.kind, k) for k in kinds)]
        known = [f for f in self.memory.facts if any(_is(f.kind, k) for k in kinds)]
        pick = (
            self.rng.choice(fresh)
            if fresh and self.rng.random() < 0.9
            else (self.rng.choice(known) if known else None)
        )
        if pick is not None:
            self.memory.used[_fkey(pick)] += 1
            self.memory.applied.add((_fkey(pick), self.tool))
        return pick

    def _ref(self, kind: str, invent: Callable[[], str]) -> str:
        fact = self._fact(kind)
        if fact is None or self.rng.random() < self.guess:
            return invent()
        return str(fact.value if kind != ROW else fact.value.get("name"))

    def _snippet(self) -> tuple[str, str]:
        """(subject, detail) taken from what is known: a row, an entity's observation, a line,
        an object's id (an agent notes the ticket it opened: "TIC-0007: engines"); `noted` is
        the id's kind then (`id:ticket_id`), else ''."""
        fact = self._fact(*TEXTUAL)
        self.noted = fact.kind if fact is not None and fact.kind.startswith("id:") else ""
        if fact is None:
            return self.rng.choice(PEOPLE), self.rng.choice(TOPICS)
        if self.noted:
            return str(fact.value), self.rng.choice(TOPICS)
        if fact.kind == ROW:
            row = fact.value
            return str(row.get("name")), str(row.get("note") or self.rng.choice(TOPICS))
        if fact.kind == OBS:
            owner = [f for f in self.memory.of(ENTITY)]
            return (str(owner[0].value) if owner else self.rng.choice(PEOPLE)), str(fact.value)
        subject, sep, detail = str(fact.value).partition(": ")  # a note line "subject: detail"
        return subject, detail if sep else self.rng.choice(TOPICS)

    def _value(self, tool: str, arg: str, prop: dict[str, Any]) -> Any:
        r = self.rng
        kind = role(tool, arg)
        word = r.choice(WORDS)
        if kind == "repo":
            return "."
        if kind == "new-file":
            return f"{word}.md"
        if kind == "new-dir":
            return word
        if kind == PATH:
            value = self._ref(PATH, lambda: f"{word}.md")
            return [value] if arg == "paths" else value
        if kind == DIR:
            return self._ref(DIR, lambda: ".") if r.random() < 0.3 else "."
        if kind == "git-files":
            return [self._ref(PATH, lambda: "README.md")]
        if kind == "text":
            subject, detail = self._snippet()
            return f"{subject}: {detail}" if arg != "message" else f"note {subject}"
        if kind == "edits":
            line = self._ref(LINE, lambda: "Notes")
            return [{"oldText": line, "newText": f"{line} (checked)"}]
        if kind == "pattern":
            return word
        if kind == "new-entities":
            subject, detail = self._snippet()
            # An entity for an object the agent tracks is of that object's type ("ticket").
            noun = self.noted.removeprefix("id:").removesuffix("_id")
            kind_of = noun or r.choice(("person", "project"))
            return [{"name": subject, "entityType": kind_of, "observations": [detail]}]
        if kind == ENTITY:
            return [self._ref(ENTITY, lambda: r.choice(PEOPLE))]
        if kind == "observations":
            name = self._ref(ENTITY, lambda: r.choice(PEOPLE))
            subject, detail = self._snippet()
            note = f"{subject}: {detail}" if self.noted else f"works on {detail}"
            return [{"entityName": name, "contents": [note]}]
        if kind == "deletions":
            obs = self._fact(OBS)
            ents = self.memory.of(ENTITY)
            owner = str(ents[-1].value) if ents else r.choice(PEOPLE)
            return [{"entityName": owner, "observations": [str(obs.value) if obs else word]}]
        if kind == "relations":
            a = self._ref(ENTITY, lambda: r.choice(PEOPLE))
            others = [str(f.value) for f in self.memory.of(ENTITY) if f.value != a]
            return [{"from": a, "to": r.choice(others or list(PEOPLE)), "relationType": "knows"}]
        if kind == "search":
            subject, _ = self._snippet()
            return subject.split()[0]
        if kind is not None and kind.startswith("sql"):
            return self._sql(tool)
        if kind in (TABLE, REV, BRANCH):
            return self._ref(kind, lambda: word)
        if kind == "new-branch":
            return f"topic-{word}"
        if kind == "branch-type":
            return "local"
        if kind == ZONE:
            return self._ref(ZONE, lambda: r.choice(ZONES))
        if kind == "other-zone":
            return r.choice(ZONES)
        if kind == CLOCK:
            return self._ref(CLOCK, lambda: f"{r.randint(8, 18):02d}:{r.choice((0, 30)):02d}")
        if kind is not None and kind.startswith("id:"):
            # An id not seen yet is guessed in the shape ids take (an agent's wrong guess).
            return self._ref(kind, lambda: f"{arg[:3].upper()}-{r.randint(1, 9999):04d}")
        return self._by_type(prop, arg)

    def _sql(self, tool: str) -> str:
        r = self.rng
        if tool == "create_table":
            return f"CREATE TABLE {r.choice(WORDS)} (id INTEGER PRIMARY KEY, name TEXT, note TEXT)"
        table = self._ref(TABLE, lambda: r.choice(WORDS))
        if tool == "write_query":
            subject, detail = self._snippet()
            if r.random() < 0.2:
                return f"UPDATE {table} SET note = '{detail}' WHERE name = '{subject}'"
            return f"INSERT INTO {table} (name, note) VALUES ('{subject}', '{detail}')"
        row = self._fact(ROW)
        if row is not None and r.random() < 0.4:
            return f"SELECT * FROM {table} WHERE name = '{row.value.get('name')}'"
        return f"SELECT * FROM {table}"

    def _by_type(self, prop: dict[str, Any], arg: str = "") -> Any:
        kind = prop.get("type")
        if "enum" in prop:
            return prop["enum"][0]
        fmt = prop.get("format")
        if fmt == "email":  # unique per call: "emails are unique" is a common requirement
            return f"{self.rng.choice(WORDS)}.{self.rng.randint(100, 999)}@example.org"
        if fmt in ("date", "date-time"):
            # A span's end after its start (start_date / end_date, start_time / end_time).
            day = 10 + (3 if arg.startswith("end") else 0)
            return f"2027-03-{day}" if fmt == "date" else f"2027-03-{day}T09:00:00Z"
        if kind == "number":
            low = float(prop.get("minimum", prop.get("exclusiveMinimum", 0)))
            return round(low + self.rng.choice((25.0, 120.5, 480.0)), 2)
        if kind == "integer":
            return 5
        if kind == "boolean":
            return False
        if kind == "array":
            return []
        if kind == "object":
            return {}
        return self.rng.choice(WORDS)

    def observe(self, mcp: str, tool: str, args: dict[str, Any], result: Any, ok: bool) -> None:
        observe(self.memory, tool, args, result, ok)
        self.last = (mcp, tool, ok)
        self.habits[tool] += int(ok)


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
    """Record `episodes` with the explorer (its habits carry over from episode to episode)."""
    habits: Counter[str] = Counter()
    return await record_episodes(
        client,
        records,
        lambda menu, ep_seed: ExplorerPolicy(menu, seed=ep_seed, habits=habits),
        label="explore",
        episodes=episodes,
        steps=steps,
        seed=seed,
        servers_per_episode=servers_per_episode,
        on_episode=on_episode,
    )
