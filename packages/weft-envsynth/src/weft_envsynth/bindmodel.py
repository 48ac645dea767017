"""LLM strategy of the specialised bindings: a chat model says which tools run SQL statements,
manage a version-controlled repository or keep a record graph, and with which arguments.

The rules (`bindings.rule_bindings`) read names and descriptions, so they miss `run_query(q)`
"Execute a SQLite statement" and can take the wrong argument for the statement; a model reads
the definitions as a whole. Its answer is trusted only as far as the runtimes can serve it: every
tool it names exists, every argument it names is in that tool's input schema with a type the
role can hold, every verb and role is one the runtime implements, each family is a set the
runtime and validation can exercise, and no tool is in two families. One problem rejects the
whole answer (a half-bound family serves nothing coherent) and the rules' binding is used.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import Field

from weft_core.models import MCPSpec, StateKind, ToolSpec, WeftModel
from weft_envsynth._internal.jsonschema import schema_type
from weft_envsynth.bindings import ToolBindings, graph_tools, rule_bindings, sql_tools, vcs_tools
from weft_envsynth.graphsem import GraphSemantics, GraphToolSet, RecordKind
from weft_envsynth.plans import Analysis
from weft_envsynth.sqlsem import SqlSemantics
from weft_envsynth.vcssem import VcsSemantics

Family = Literal["sql", "vcs", "graph", "none"]
_FAMILIES: tuple[Family, ...] = ("sql", "vcs", "graph")


class ToolBinding(WeftModel):
    """One tool's family and, for sql / vcs / graph, that family's semantics (only that one)."""

    tool: str
    family: Family
    sql: SqlSemantics | None = None
    vcs: VcsSemantics | None = None
    graph: GraphSemantics | None = None


class BindingAnswer(WeftModel):
    """Every tool of the set, once; the record kinds when some tools are a record graph."""

    tools: list[ToolBinding] = Field(default_factory=list)
    kinds: list[RecordKind] = Field(default_factory=list)


_PROMPT = """\
Bind the tools of this MCP tool set to the runtimes that serve them. List every tool once with \
its family and that family's semantics (leave the other families' fields null):
- "sql": the tool runs SQL statements on a database, or lists its tables, or describes one. \
`sql.verb` is "select", "write" (INSERT/UPDATE/DELETE), "create" (CREATE TABLE) or "any" \
(the statement kinds it accepts) with `statement_argument` the required string argument carrying \
the statement; or "tables" (lists the tables; no required argument); or "describe" with \
`table_argument` the required string argument naming the table.
- "vcs": version control of a local repository (git). `vcs.verb` is one of status, diff_unstaged, \
diff_staged, diff, add, reset, commit, log, branches, create_branch, checkout, show; `vcs.roles` \
maps each argument it uses to a role: repo (the repository path; every vcs tool has one), files, \
message, name, base, revision, limit, since, until, kind, contains, not_contains, context; \
`vcs.choices` maps a `kind` argument to the only values it allows.
- "graph": the tools keep named records, links between them and notes on them (a knowledge graph \
of entities, relations and observations). `graph.verb` is create, append, delete, delete_match, \
detach, read_all, search or open, with `argument` (the argument carrying the batch, the names or \
the query), `kind`, and for append/detach `item_ref`, `item_list`, `target_list`; for delete \
`cascade` (link kinds deleted with the records). Describe each record kind once in `kinds`: \
name, collection (the argument carrying its items), fields, key, lists (array-of-string fields), \
refs (field -> the kind it names). Leave `output` empty.
- "none": any other tool.
A family is a coherent set or nothing: SQL needs a statement tool; version control a commit and \
a status or log; a record graph a create and a read.

"""


def _type_problem(tool: ToolSpec, arg: str | None, want: set[str], what: str) -> str | None:
    """Why `arg` cannot be `what` of `tool` (missing, absent or of another JSON type); None if it can."""
    if not arg:
        return f"tool {tool.name!r}: {what} names no argument"
    if arg not in tool.properties:
        return f"tool {tool.name!r}: {what} {arg!r} is not an argument of the tool"
    found = schema_type(tool.properties[arg])
    if found is not None and found not in want:
        return f"tool {tool.name!r}: {what} {arg!r} is {found}, not {' or '.join(sorted(want))}"
    return None


def _items(tool: ToolSpec, arg: str | None) -> dict[str, Any] | None:
    sch = tool.properties.get(arg or "")
    items = sch.get("items") if isinstance(sch, dict) else None
    return items if isinstance(items, dict) else None


def _string_items(tool: ToolSpec, arg: str | None) -> bool:
    items = _items(tool, arg)
    return items is None or schema_type(items) in {None, "string"}


def _object_fields(tool: ToolSpec, arg: str | None) -> dict[str, Any] | None:
    items = _items(tool, arg)
    props = items.get("properties") if items is not None else None
    return props if isinstance(props, dict) else None


def _read_only(tool: ToolSpec) -> bool:
    ann = tool.annotations if isinstance(tool.annotations, dict) else {}
    return ann.get("readOnlyHint", ann.get("read_only_hint")) is True


_STATEMENT_VERBS = {"select", "write", "create", "any"}


def _sql_problems(tool: ToolSpec, sem: SqlSemantics) -> list[str]:
    out: list[str] = []
    if sem.verb in _STATEMENT_VERBS:
        arg, what = sem.statement_argument, "statement argument"
        if sem.table_argument is not None:
            out.append(f"tool {tool.name!r}: a statement tool takes no table argument")
    elif sem.verb == "describe":
        arg, what = sem.table_argument, "table argument"
        if sem.statement_argument is not None:
            out.append(f"tool {tool.name!r}: a table description takes no statement")
    else:  # tables: the runtime lists every table and reads no argument
        if tool.required:
            out.append(
                f"tool {tool.name!r}: a table listing has required arguments {tool.required}"
            )
        return out
    bad = _type_problem(tool, arg, {"string"}, what)
    if bad is not None:
        return [*out, bad]
    if arg not in tool.required:
        out.append(f"tool {tool.name!r}: {what} {arg!r} is optional; the runtime needs it")
    return out


_ROLE_TYPES: dict[str, set[str]] = {"files": {"string", "array"}, "limit": {"integer", "number"}}
_ROLE_TYPES["context"] = _ROLE_TYPES["limit"]
_VERB_NEEDS = {
    "commit": "message", "add": "files", "checkout": "name", "create_branch": "name",
    "show": "revision", "diff": "revision",
}  # fmt: skip
_VCS_WRITES = {"add", "reset", "commit", "checkout", "create_branch"}


def _vcs_problems(tool: ToolSpec, sem: VcsSemantics) -> list[str]:
    out: list[str] = []
    for arg, role in sem.roles.items():
        bad = _type_problem(tool, arg, _ROLE_TYPES.get(role, {"string"}), f"role {role}")
        if bad is None and role == "files" and not _string_items(tool, arg):
            bad = f"tool {tool.name!r}: role files {arg!r} is not a list of paths"
        if bad is not None:
            out.append(bad)
    roles = list(sem.roles.values())
    if roles.count("repo") != 1:
        out.append(f"tool {tool.name!r}: {roles.count('repo')} repository arguments, not one")
    need = _VERB_NEEDS.get(sem.verb)
    if need is not None and need not in roles:
        out.append(f"tool {tool.name!r}: vcs {sem.verb} needs an argument with role {need}")
    unserved = [a for a in tool.required if a not in sem.roles]
    if unserved:
        out.append(f"tool {tool.name!r}: required argument(s) {unserved} have no role")
    if _read_only(tool) and sem.verb in _VCS_WRITES:
        out.append(f"tool {tool.name!r} is declared read-only but vcs {sem.verb} writes")
    for arg, values in sem.choices.items():
        if sem.roles.get(arg) != "kind" or not values:
            out.append(f"tool {tool.name!r}: choices for {arg!r}, which is no kind argument")
    return out


_GRAPH_READS = {"read_all", "search", "open"}
_GRAPH_WRITES = {"create", "append", "delete", "delete_match", "detach"}


def _kind_problems(kinds: list[RecordKind]) -> list[str]:
    out: list[str] = []
    names = Counter(k.name for k in kinds)
    out += [f"record kind {n!r} is described twice" for n, c in names.items() if c > 1]
    for k in kinds:
        fields = set(k.fields)
        strays = [f for f in [*k.key, *k.lists, *k.refs] if f not in fields]
        if not k.key or strays:
            out.append(f"record kind {k.name!r}: key, lists and refs must be among its fields")
        out += [
            f"record kind {k.name!r}: field {f!r} names unknown kind {t!r}"
            for f, t in k.refs.items()
            if t not in names
        ]
    if kinds and all(k.refs for k in kinds):
        out.append("no record kind has records of its own (every kind only links others)")
    return out


def _graph_problems(tool: ToolSpec, sem: GraphSemantics, kinds: dict[str, RecordKind]) -> list[str]:
    name = repr(tool.name)
    if _read_only(tool) and sem.verb in _GRAPH_WRITES:
        return [f"tool {name} is declared read-only but graph {sem.verb} writes"]
    if sem.verb == "read_all":
        return [f"tool {name}: a whole-graph read has required arguments"] if tool.required else []
    want = {"search": {"string"}}.get(sem.verb, {"array"})
    bad = _type_problem(tool, sem.argument, want, "batch argument")
    if bad is not None:
        return [bad]
    if sem.verb in {"search", "open"}:
        if sem.verb == "open" and not _string_items(tool, sem.argument):
            return [f"tool {name}: names argument {sem.argument!r} is not a list of names"]
        return []
    kind = kinds.get(sem.kind or "")
    if kind is None:
        return [f"tool {name}: graph {sem.verb} on unknown record kind {sem.kind!r}"]
    if sem.verb == "delete":
        if not _string_items(tool, sem.argument):
            return [f"tool {name}: names argument {sem.argument!r} is not a list of names"]
        return [
            f"tool {name}: cascade kind {c!r} does not link {kind.name!r}"
            for c in sem.cascade
            if kind.name not in (kinds[c].refs.values() if c in kinds else ())
        ]
    fields = _object_fields(tool, sem.argument)
    if fields is None:
        return [f"tool {name}: batch argument {sem.argument!r} is not a list of objects"]
    if sem.verb in {"create", "delete_match"}:
        if set(fields) != set(kind.fields):
            return [f"tool {name}: the items of {sem.argument!r} are not {kind.name!r} records"]
        return []
    out = [
        f"tool {name}: item field {f!r} is not in the items of {sem.argument!r}"
        for f in (sem.item_ref, sem.item_list)
        if f is None or f not in fields
    ]
    if sem.target_list not in kind.lists:
        out.append(f"tool {name}: {sem.target_list!r} is no list field of {kind.name!r}")
    return out


def _family_problems(b: ToolBinding) -> list[str]:
    given = [f for f in _FAMILIES if getattr(b, f) is not None]
    if b.family == "none":
        return [f"tool {b.tool!r} is in no family but has {given} semantics"] if given else []
    if len(given) > 1:
        return [f"tool {b.tool!r} is in two families ({', '.join(given)})"]
    if given != [b.family]:
        return [f"tool {b.tool!r}: family {b.family} without {b.family} semantics"]
    return []


def check_bindings(spec: MCPSpec, answer: BindingAnswer) -> list[str]:
    """Deterministic checks of a model's binding against the definitions: every problem, as text."""
    problems: list[str] = []
    tools = {t.name: t for t in spec.tools}
    families: dict[str, set[str]] = {}
    for b in answer.tools:
        if b.tool not in tools:
            problems.append(f"binding for unknown tool {b.tool!r}")
            continue
        families.setdefault(b.tool, set()).add(b.family)
        problems += _family_problems(b)
    problems += [f"tool {n!r} has no binding" for n in tools if n not in families]
    counts = Counter(b.tool for b in answer.tools)
    for n, fams in families.items():
        if len(fams) > 1:
            problems.append(f"tool {n!r} is in two families ({', '.join(sorted(fams))})")
        elif counts[n] > 1:
            problems.append(f"tool {n!r} is bound twice")
    if problems:
        return problems  # the per-family checks below assume one clean entry per tool
    got = to_bindings(spec, answer)
    for n, s in got.sql.items():
        problems += _sql_problems(tools[n], s)
    if got.sql and not {s.verb for s in got.sql.values()} & _STATEMENT_VERBS:
        problems.append("the sql tools have no statement tool")
    for n, v in got.vcs.items():
        problems += _vcs_problems(tools[n], v)
    verbs = {v.verb for v in got.vcs.values()}
    if got.vcs and ("commit" not in verbs or not verbs & {"status", "log"}):
        problems.append("the vcs tools lack a commit or a repository read (status or log)")
    graph = got.graph
    if graph.tools or answer.kinds:
        kinds = {k.name: k for k in graph.kinds}
        problems += _kind_problems(graph.kinds)
        for n, g in graph.tools.items():
            problems += _graph_problems(tools[n], g, kinds)
        gverbs = {g.verb for g in graph.tools.values()}
        if "create" not in gverbs or not gverbs & _GRAPH_READS:
            problems.append("the graph tools lack a create or a read")
        # State import files a document's list under the kind whose collection names it.
        made: dict[str, set[str | None]] = {}
        for g in graph.tools.values():
            if g.verb == "create" and g.kind is not None:
                made.setdefault(g.kind, set()).add(g.argument)
        for k in graph.kinds:
            if k.name not in made:
                problems.append(f"record kind {k.name!r} is created by no tool")
            elif k.collection not in made[k.name]:
                problems.append(
                    f"record kind {k.name!r}: collection {k.collection!r} is not the argument "
                    "that creates it"
                )
    return problems


def _documented_output(tool: ToolSpec) -> dict[str, Any]:
    out = tool.output_schema if isinstance(tool.output_schema, dict) else {}
    props = out.get("properties")
    return dict(props) if isinstance(props, dict) else {}


def to_bindings(spec: MCPSpec, answer: BindingAnswer) -> ToolBindings:
    """The answer as a binding. A graph tool's results follow the documented output schema, never
    the model's copy of it."""
    by_name = {t.name: t for t in spec.tools}
    sql = {b.tool: b.sql for b in answer.tools if b.family == "sql" and b.sql is not None}
    vcs = {b.tool: b.vcs for b in answer.tools if b.family == "vcs" and b.vcs is not None}
    graph = {
        b.tool: b.graph.model_copy(update={"output": _documented_output(by_name[b.tool])})
        for b in answer.tools
        if b.family == "graph" and b.graph is not None and b.tool in by_name
    }
    kinds = answer.kinds if graph else []
    return ToolBindings(
        sql=sql, vcs=vcs, graph=GraphToolSet(kinds=kinds, tools=graph), source="model"
    )


def _bound(b: ToolBindings) -> dict[str, str]:
    """Tool -> its family and what the runtime reads of it (the evidence is only words)."""
    sems: list[tuple[str, dict[str, WeftModel]]] = [
        ("sql", dict(b.sql)), ("vcs", dict(b.vcs)), ("graph", dict(b.graph.tools)),
    ]  # fmt: skip
    return {
        n: f"{family} {sem.model_dump_json(exclude={'evidence', 'output'})}"
        for family, tools in sems
        for n, sem in tools.items()
    }


def bind(spec: MCPSpec, llm: BaseChatModel) -> tuple[ToolBindings | None, list[str]]:
    """The model's binding when the checks accept it, else None (the rules' binding stands);
    with a note saying which."""
    if not spec.tools:
        return None, []
    from weft_envsynth._internal.llm import ask_or_none, spec_digest

    answer, err = ask_or_none(llm, BindingAnswer, _PROMPT + spec_digest(spec))
    if answer is None:
        return None, [f"bindings: model output unusable ({err}); used the rules' binding"]
    problems = check_bindings(spec, answer)
    if problems:
        return None, [
            f"bindings: model binding rejected ({problems[0]}; {len(problems)} problem(s)); "
            "used the rules' binding"
        ]
    got = to_bindings(spec, answer)
    mine, rules = _bound(got), _bound(rule_bindings(spec))
    changed = sorted(n for n in {*mine, *rules} if mine.get(n) != rules.get(n))
    said = f"; differs from the rules for {changed}" if changed else ""
    return got, [f"bindings: model binding accepted ({len(mine)} tool(s) bound{said})"]


def effect_problems(spec: MCPSpec, analysis: Analysis, bindings: ToolBindings | None) -> list[str]:
    """A bound tool is served by its runtime only over reference data (backend): an analysis that
    gives it database or workspace state would silently drop the binding."""
    bound = {
        **{n: "sql" for n in sql_tools(spec, bindings)},
        **{n: "vcs" for n in vcs_tools(spec, bindings)},
        **{n: "graph" for n in graph_tools(spec, bindings).tools},
    }
    out: list[str] = []
    for eff in analysis.tools:
        family = bound.get(eff.tool)
        if family is not None and eff.state_kind != StateKind.STATELESS:
            out.append(f"tool {eff.tool!r} is bound to {family} but has {eff.state_kind} state")
    return out
