"""The specialised bindings' LLM strategy (bindmodel) with a scripted chat model: it binds what the
rules miss or get wrong, its wrong answers are caught with a reason and the rules' binding is used,
and the binding chosen is the one the bundle serves, validates and saves (bindings.json). Without
a model nothing changes."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from weft_core.loaders import load_spec_file
from weft_core.models import MCPSpec, StateKind, ToolSpec
from weft_core.testing import ScriptedChatModel
from weft_envsynth.analyze import analyze, analyze_programmatic
from weft_envsynth.backend import backend
from weft_envsynth.bindings import (
    BINDINGS_FILE,
    ToolBindings,
    load_bindings,
    rule_bindings,
    sql_tools,
)
from weft_envsynth.bindmodel import (
    BindingAnswer,
    ToolBinding,
    bind,
    check_bindings,
    effect_problems,
    to_bindings,
)
from weft_envsynth.contracts import contracts
from weft_envsynth.graph import build_envsynth_graph
from weft_envsynth.graphsem import GraphSemantics
from weft_envsynth.schema import schema_programmatic
from weft_envsynth.state import EnvSynthContext, EnvSynthState

S = {"type": "string"}


def _tool(
    name: str, desc: str, props: dict[str, Any], required: list[str], ann: Any = None
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": required},
        annotations=ann,
    )


RUN_QUERY = _tool(
    "run_query",
    "Execute a SQLite statement against the warehouse database and return the result rows.",
    {
        "q": {"type": "string", "description": "The statement to run"},
        "max_rows": {"type": "integer", "description": "Most rows to return"},
    },
    ["q"],
)
# The rules see no statement: the argument is `q` and only the tool's description says SQL.
WAREHOUSE = MCPSpec(name="warehouse", tools=[RUN_QUERY])
BINDS_RUN_QUERY: dict[str, Any] = {
    "tools": [
        {
            "tool": "run_query",
            "family": "sql",
            "sql": {
                "verb": "any",
                "statement_argument": "q",
                "evidence": "'Execute a SQLite statement'; q is the statement",
            },
        }
    ]
}
# The rules take the first string described as SQL for the statement: here the database name.
MSSQL = MCPSpec(
    name="mssql",
    tools=[
        _tool(
            "execute_sql",
            "Execute a query on the given database and return its rows.",
            {
                "database": {"type": "string", "description": "Name of the SQL Server database"},
                "query": {"type": "string", "description": "The statement to execute"},
            },
            ["database", "query"],
        )
    ],
)
REPO = {"repo_path": {"type": "string", "description": "Path to the Git repository"}}
# A git tool set whose names and argument names are none of git's words: the rules bind nothing.
JOURNAL = MCPSpec(
    name="journal",
    tools=[
        _tool(
            "where_am_i",
            "Shows the working tree of the repository",
            REPO,
            ["repo_path"],
            {"readOnlyHint": True},
        ),
        _tool(
            "prepare",
            "Marks files of the working tree to go into the next record of the repository",
            {**REPO, "paths": {"type": "array", "items": S}},
            ["repo_path", "paths"],
        ),
        _tool(
            "remember",
            "Records the prepared files in the repository history with a note",
            {**REPO, "note": {"type": "string", "description": "What the record is about"}},
            ["repo_path", "note"],
        ),
        _tool(
            "timeline",
            "Lists the earlier records of the repository, newest first",
            {**REPO, "how_many": {"type": "integer"}},
            ["repo_path"],
            {"readOnlyHint": True},
        ),
    ],
)
BINDS_JOURNAL: dict[str, Any] = {
    "tools": [
        {"tool": "where_am_i", "family": "vcs", "vcs": {"verb": "status", "roles": {"repo_path": "repo"}}},
        {"tool": "prepare", "family": "vcs",
         "vcs": {"verb": "add", "roles": {"repo_path": "repo", "paths": "files"}}},
        {"tool": "remember", "family": "vcs",
         "vcs": {"verb": "commit", "roles": {"repo_path": "repo", "note": "message"}}},
        {"tool": "timeline", "family": "vcs",
         "vcs": {"verb": "log", "roles": {"repo_path": "repo", "how_many": "limit"}}},
    ]
}  # fmt: skip


def _say(answer: dict[str, Any] | BindingAnswer, name: str = "BindingAnswer") -> AIMessage:
    args = answer.model_dump(mode="json") if isinstance(answer, BindingAnswer) else answer
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "c1"}])


def _script(spec: MCPSpec, answer: dict[str, Any]) -> ScriptedChatModel:
    """A model that binds `spec` as `answer` says, then answers every later node with the
    product the programmatic strategy makes from that binding (what a model that agrees says)."""
    bindings = to_bindings(spec, BindingAnswer.model_validate(answer))
    a = analyze_programmatic(spec, bindings)
    m = schema_programmatic(spec, a)
    cs, _, _ = contracts(spec, a, m)
    plan, _ = backend(spec, m, cs, bindings=bindings)
    return ScriptedChatModel(
        [
            _say(answer),
            _say(a.model_dump(mode="json", exclude={"bindings"}), "Analysis"),
            _say(m.model_dump(mode="json"), "EntityModel"),
            _say(cs.model_dump(mode="json"), "ContractSet"),
            _say(plan.model_dump(mode="json"), "BackendPlan"),
        ]
    )


def _synthesize(spec: MCPSpec, llm: Any, out: Path) -> EnvSynthState:
    graph = build_envsynth_graph()
    state = EnvSynthState(spec=spec, out_dir=str(out), rounds=1)
    return EnvSynthState.model_validate(graph.invoke(state, context=EnvSynthContext(llm=llm)))


Step = tuple[str, dict[str, Any]] | Callable[[Path], object]


def _serve(bundle: Path, tmp: Path, calls: list[Step]) -> list[tuple[bool, Any]]:
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth.loader import import_bundle, unload_bundle

    db, ws = tmp / "state.sqlite", tmp / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "README.md").write_text("# repo\n")
    shutil.copyfile(bundle / "seed.sqlite", db)
    mod = import_bundle(bundle)
    out: list[tuple[bool, Any]] = []

    async def go() -> None:
        with bind_session(SessionBinding(session_id=f"b-{tmp.name}", db_path=db, workspace=ws)):
            async with Client(mod.create_server()) as c:
                for step in calls:
                    if callable(step):  # the user edits the workspace between calls
                        step(ws)
                        continue
                    name, args = step
                    r = await c.call_tool(name, args, raise_on_error=False)
                    out.append((bool(r.is_error), r.structured_content))

    try:
        asyncio.run(go())
    finally:
        release_session(f"b-{tmp.name}")
        unload_bundle(mod)
    return out


def _checks(bundle: Path, tool: str) -> tuple[str, list[str]]:
    """How the bundle serves `tool` and the checks it passed in the final validation."""
    data = json.loads((bundle / "validation.json").read_text(encoding="utf-8"))
    passed = [c["name"] for c in data["rounds"][-1]["checks"] if c["tool"] == tool and c["passed"]]
    return data["tool_semantics"][tool]["kind"], passed


def test_a_sql_tool_the_rules_miss_is_bound_by_the_model_and_runs_sql(tmp_path: Path) -> None:
    assert rule_bindings(WAREHOUSE).sql == {}
    llm = _script(WAREHOUSE, BINDS_RUN_QUERY)
    final = _synthesize(WAREHOUSE, llm, tmp_path / "out")
    llm.assert_exhausted()
    assert "bindings: model binding accepted (1 tool(s) bound; differs from the rules for " \
        "['run_query'])" in final.notes  # fmt: skip
    assert "analyze: model analysis accepted" in final.notes
    assert final.manifest is not None and final.manifest.certified, final.manifest
    bundle = Path(final.bundle_path or "")
    # Saved with the bundle: validation (here) and later loads read the same binding.
    saved = load_bindings(bundle)
    assert saved is not None and saved.source == "model"
    assert saved.sql["run_query"].statement_argument == "q"
    kind, passed = _checks(bundle, "run_query")
    assert kind == "sql" and any(n.startswith("sql_") for n in passed), passed
    got = _serve(
        bundle,
        tmp_path,
        [
            ("run_query", {"q": "CREATE TABLE pallets (id INTEGER PRIMARY KEY, sku TEXT)"}),
            ("run_query", {"q": "INSERT INTO pallets (sku) VALUES ('A-1'), ('B-2')"}),
            ("run_query", {"q": "SELECT sku FROM pallets ORDER BY id"}),
            ("run_query", {"q": "SELECT * FROM nowhere"}),
        ],
    )
    assert [e for e, _ in got] == [False, False, False, True]
    assert got[1][1] == {"affected_rows": 2}
    assert got[2][1] == {"rows": [{"sku": "A-1"}, {"sku": "B-2"}], "count": 2}


def test_the_model_corrects_the_statement_argument_the_rules_got_wrong(tmp_path: Path) -> None:
    assert rule_bindings(MSSQL).sql["execute_sql"].statement_argument == "database"
    answer = {
        "tools": [
            {
                "tool": "execute_sql",
                "family": "sql",
                "sql": {"verb": "any", "statement_argument": "query"},
            }
        ]
    }
    llm = _script(MSSQL, answer)
    final = _synthesize(MSSQL, llm, tmp_path / "out")
    assert any("differs from the rules for ['execute_sql']" in n for n in final.notes)
    assert final.manifest is not None and final.manifest.certified, final.manifest
    got = _serve(
        Path(final.bundle_path or ""),
        tmp_path,
        [
            ("execute_sql", {"database": "main", "query": "CREATE TABLE t (x INTEGER)"}),
            ("execute_sql", {"database": "main", "query": "INSERT INTO t (x) VALUES (7)"}),
            ("execute_sql", {"database": "main", "query": "SELECT x FROM t"}),
        ],
    )
    assert got[2] == (False, {"rows": [{"x": 7}], "count": 1}), got


def test_a_git_tool_set_with_unusual_names_is_bound_by_the_model(tmp_path: Path) -> None:
    assert rule_bindings(JOURNAL).vcs == {}
    final = _synthesize(JOURNAL, _script(JOURNAL, BINDS_JOURNAL), tmp_path / "out")
    assert final.manifest is not None and final.manifest.certified, final.manifest
    bundle = Path(final.bundle_path or "")
    kind, passed = _checks(bundle, "remember")
    assert kind == "vcs" and "vcs_commit_records" in passed, passed
    ws = str(tmp_path / "ws")
    got = _serve(
        bundle,
        tmp_path,
        [
            ("where_am_i", {"repo_path": ws}),
            lambda w: (w / "plan.txt").write_text("ship it\n"),
            ("prepare", {"repo_path": ws, "paths": ["plan.txt"]}),
            ("where_am_i", {"repo_path": ws}),
            ("remember", {"repo_path": ws, "note": "first record"}),
            ("timeline", {"repo_path": ws, "how_many": 5}),
        ],
    )
    assert [e for e, _ in got] == [False] * 5, got
    assert "plan.txt" in json.dumps(got[2][1])
    assert "first record" in json.dumps(got[4][1])


# Rules bind read_query; the model also binds run_query, rightly or not.
MIXED = MCPSpec(
    name="mixed",
    tools=[
        _tool(
            "read_query",
            "Execute a SELECT query on the SQLite database",
            {"query": {"type": "string", "description": "SQL query to execute"}},
            ["query"],
        ),
        RUN_QUERY,
    ],
)
READ_QUERY = {"tool": "read_query", "family": "sql", "sql": {"verb": "select", "statement_argument": "query"}}  # fmt: skip


def _with(run_query: dict[str, Any] | list[dict[str, Any]]) -> dict[str, Any]:
    more = run_query if isinstance(run_query, list) else [run_query]
    return {"tools": [READ_QUERY, *more]}


SQL_RUN = {"tool": "run_query", "family": "sql"}


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (
            _with({**SQL_RUN, "sql": {"verb": "any", "statement_argument": "query"}}),
            "rejected (tool 'run_query': statement argument 'query' is not an argument of the tool",
        ),
        (
            _with({**SQL_RUN, "sql": {"verb": "any", "statement_argument": "max_rows"}}),
            "rejected (tool 'run_query': statement argument 'max_rows' is integer, not string",
        ),
        (
            _with(
                [
                    {**SQL_RUN, "sql": {"verb": "any", "statement_argument": "q"}},
                    {
                        "tool": "run_query",
                        "family": "vcs",
                        "vcs": {"verb": "status", "roles": {"q": "repo"}},
                    },
                ]
            ),
            "rejected (tool 'run_query' is in two families (sql, vcs); 1 problem(s))",
        ),
        (
            _with(
                {
                    **SQL_RUN,
                    "sql": {"verb": "any", "statement_argument": "q"},
                    "vcs": {"verb": "status", "roles": {"q": "repo"}},
                }
            ),
            "rejected (tool 'run_query' is in two families (sql, vcs)",
        ),
        (
            _with({**SQL_RUN, "sql": {"verb": "tables"}}),
            "rejected (tool 'run_query': a table listing has required arguments ['q']",
        ),
        (
            {"tools": [READ_QUERY]},
            "rejected (tool 'run_query' has no binding",
        ),
        (
            _with({**SQL_RUN, "sql": {"verb": "drop", "statement_argument": "q"}}),
            "model output unusable",
        ),
        (
            '```json\n{"tools": [{"tool": "run_query", "family": "sql", "sql": {"verb": "any"',
            "model output unusable",
        ),
    ],
    ids=[
        "unknown-argument",
        "wrong-type",
        "two-entries",
        "two-semantics",
        "unserved-required",
        "missing-tool",
        "unsupported-verb",
        "malformed-json",
    ],
)
def test_wrong_bindings_are_rejected_and_the_rules_binding_used(reply: Any, why: str) -> None:
    llm = ScriptedChatModel([_say(reply) if isinstance(reply, dict) else reply, "no analysis"])
    analysis, notes = analyze(MIXED, llm)
    assert why in notes[0] and "used the rules' binding" in notes[0], notes
    assert analysis.bindings is None and analysis == analyze_programmatic(MIXED)
    assert set(sql_tools(MIXED, analysis.bindings)) == {"read_query"}


def test_the_same_answer_right_is_accepted() -> None:
    got, notes = bind(MIXED, ScriptedChatModel([_say(_with(BINDS_RUN_QUERY["tools"]))]))
    assert got is not None and set(got.sql) == {"read_query", "run_query"}
    assert notes == [
        "bindings: model binding accepted (2 tool(s) bound; differs from the rules for "
        "['run_query'])"
    ]


def _rules_answer(spec: MCPSpec) -> BindingAnswer:
    b = rule_bindings(spec)
    tools = []
    for t in spec.tools:
        if t.name in b.sql:
            tools.append(ToolBinding(tool=t.name, family="sql", sql=b.sql[t.name]))
        elif t.name in b.vcs:
            tools.append(ToolBinding(tool=t.name, family="vcs", vcs=b.vcs[t.name]))
        elif t.name in b.graph.tools:
            tools.append(ToolBinding(tool=t.name, family="graph", graph=b.graph.tools[t.name]))
        else:
            tools.append(ToolBinding(tool=t.name, family="none"))
    return BindingAnswer(tools=tools, kinds=b.graph.kinds)


GRAPH = MCPSpec(
    name="memory",
    tools=[
        _tool(
            "create_entities",
            "Create multiple new entities in the knowledge graph",
            {
                "entities": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": S,
                            "entityType": S,
                            "observations": {"type": "array", "items": S},
                        },
                        "required": ["name", "entityType", "observations"],
                    },
                }
            },
            ["entities"],
        ),
        _tool(
            "add_observations",
            "Add new observations to existing entities in the knowledge graph",
            {
                "observations": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "entityName": {
                                "type": "string",
                                "description": "The name of the entity to add the observations to",
                            },
                            "contents": {"type": "array", "items": S},
                        },
                        "required": ["entityName", "contents"],
                    },
                }
            },
            ["observations"],
        ),
        _tool("read_graph", "Read the entire knowledge graph", {}, [], {"readOnlyHint": True}),
        _tool(
            "search_nodes",
            "Search for nodes in the knowledge graph",
            {"query": S},
            ["query"],
            {"readOnlyHint": True},
        ),
    ],
)


@pytest.mark.parametrize("name", ["journal-rules-miss", "memory", "mixed", "mssql", "examples"])
def test_the_checks_accept_what_the_rules_bind(name: str) -> None:
    # The checks hold the model to what the runtimes serve; the rules' own bindings (which
    # validation certifies) must pass them, or a right answer would be refused.
    root = Path(__file__).resolve().parents[3] / "examples" / "mcps"
    specs = {
        "journal-rules-miss": [JOURNAL],
        "memory": [GRAPH],
        "mixed": [MIXED],
        "mssql": [MSSQL],
        "examples": [load_spec_file(p).spec for p in sorted(root.glob("*.json"))],
    }[name]
    for spec in specs:
        assert check_bindings(spec, _rules_answer(spec)) == [], spec.name
    if name == "memory":
        assert len(rule_bindings(GRAPH).graph.tools) == 4


def test_graph_answers_are_checked_against_the_record_kinds() -> None:
    right = _rules_answer(GRAPH)
    assert check_bindings(GRAPH, right) == []
    kinds = [k.model_copy(update={"fields": ["name", "entityType"]}) for k in right.kinds]
    assert check_bindings(GRAPH, right.model_copy(update={"kinds": kinds})) == [
        "record kind 'entity': key, lists and refs must be among its fields",
        "tool 'create_entities': the items of 'entities' are not 'entity' records",
    ]
    no_read = [
        ToolBinding(tool=b.tool, family="none") if b.tool in {"read_graph", "search_nodes"} else b
        for b in right.tools
    ]
    problems = check_bindings(GRAPH, right.model_copy(update={"tools": no_read}))
    assert "the graph tools lack a create or a read" in problems
    wrong_list = [
        b.model_copy(update={"graph": b.graph.model_copy(update={"target_list": "notes"})})
        if b.tool == "add_observations" and b.graph is not None
        else b
        for b in right.tools
    ]
    assert check_bindings(GRAPH, right.model_copy(update={"tools": wrong_list})) == [
        "tool 'add_observations': 'notes' is no list field of 'entity'"
    ]


def test_vcs_answers_need_a_repository_and_a_coherent_set() -> None:
    answer = BindingAnswer.model_validate(BINDS_JOURNAL)
    assert check_bindings(JOURNAL, answer) == []
    commit_only = BindingAnswer(
        tools=[
            b if b.tool == "remember" else ToolBinding(tool=b.tool, family="none")
            for b in answer.tools
        ]
    )
    assert check_bindings(JOURNAL, commit_only) == [
        "the vcs tools lack a commit or a repository read (status or log)"
    ]
    no_repo = BINDS_JOURNAL["tools"][2] | {"vcs": {"verb": "commit", "roles": {"note": "message"}}}
    bad = BindingAnswer.model_validate(
        {"tools": [*BINDS_JOURNAL["tools"][:2], no_repo, BINDS_JOURNAL["tools"][3]]}
    )
    assert check_bindings(JOURNAL, bad) == [
        "tool 'remember': 0 repository arguments, not one",
        "tool 'remember': required argument(s) ['repo_path'] have no role",
    ]


def test_a_model_analysis_that_drops_a_bound_tool_to_database_state_is_rejected() -> None:
    bindings = to_bindings(WAREHOUSE, BindingAnswer.model_validate(BINDS_RUN_QUERY))
    a = analyze_programmatic(WAREHOUSE, bindings)
    assert effect_problems(WAREHOUSE, a, bindings) == []
    db = a.model_copy(
        update={"tools": [t.model_copy(update={"state_kind": StateKind.DATABASE}) for t in a.tools]}
    )
    assert effect_problems(WAREHOUSE, db, bindings) == [
        "tool 'run_query' is bound to sql but has database state"
    ]


def test_without_a_model_nothing_changes(helpdesk_bundle: Path, tmp_path: Path) -> None:
    for spec in (WAREHOUSE, MIXED, JOURNAL, GRAPH):
        analysis, notes = analyze(spec)
        assert notes == [] and analysis.bindings is None
        assert analysis == analyze_programmatic(spec, None)
    assert not (helpdesk_bundle / BINDINGS_FILE).exists()
    assert load_bindings(helpdesk_bundle) is None
    # The field stays out of what the model is asked for, and old dumps still load.
    from weft_envsynth.plans import Analysis

    assert "bindings" not in json.dumps(Analysis.model_json_schema())
    old = analyze_programmatic(MIXED).model_dump(mode="json", exclude={"bindings"})
    assert Analysis.model_validate(old).bindings is None
    assert ToolBindings() == ToolBindings.model_validate_json(ToolBindings().model_dump_json())


# A memory server whose reads the rules do not take for reads of the records (their names
# neither name a kind nor the graph, and they document no output): no record graph by the rules.
MEMO = MCPSpec(
    name="memo",
    tools=[
        GRAPH.tool("create_entities"),
        GRAPH.tool("add_observations"),
        _tool("recall", "Everything remembered so far", {}, [], {"readOnlyHint": True}),
    ],
)


def test_a_model_bound_record_graph_takes_imported_state(tmp_path: Path) -> None:
    assert rule_bindings(MEMO).graph.tools == {}
    right = _rules_answer(GRAPH)
    tools = [b for b in right.tools if b.tool in {"create_entities", "add_observations"}]
    answer = BindingAnswer(
        tools=[
            *tools,
            ToolBinding(tool="recall", family="graph", graph=GraphSemantics(verb="read_all")),
        ],
        kinds=right.kinds,
    ).model_dump(mode="json")
    final = _synthesize(MEMO, _script(MEMO, answer), tmp_path / "out")
    assert final.manifest is not None and final.manifest.certified, final.manifest
    bundle = Path(final.bundle_path or "")
    # import_state reads the record kinds from the binding the bundle saved.
    from weft_envsynth import import_state

    db, ws = tmp_path / "state.sqlite", tmp_path / "ws"
    shutil.copyfile(bundle / "seed.sqlite", db)
    ada = {"name": "ada", "entityType": "person", "observations": ["writes programs"]}
    report = import_state(bundle, {"entities": [ada]}, db_path=db, workspace=ws)
    assert report.rows == {"entity": 1} and report.not_imported == [], report
    # Without the saved binding the rules know no record kind: the document's records would go to
    # a database table that has none of their fields.
    bare = tmp_path / "bare"
    shutil.copytree(bundle, bare)
    (bare / BINDINGS_FILE).unlink()
    shutil.copyfile(bundle / "seed.sqlite", tmp_path / "bare.sqlite")
    lost = import_state(bare, {"entities": [ada]}, db_path=tmp_path / "bare.sqlite", workspace=ws)
    assert "entities[0].name: entity has no field for it" in lost.not_imported, lost
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth.loader import import_bundle, unload_bundle

    mod = import_bundle(bundle)

    async def recall() -> Any:
        with bind_session(SessionBinding(session_id="memo", db_path=db, workspace=ws)):
            async with Client(mod.create_server()) as c:
                return (await c.call_tool("recall", {})).structured_content

    try:
        assert ada in json.loads(json.dumps(asyncio.run(recall())))["entities"]
    finally:
        release_session("memo")
        unload_bundle(mod)


def test_a_record_kind_is_filed_under_the_argument_that_creates_it() -> None:
    right = _rules_answer(GRAPH)
    renamed = [k.model_copy(update={"collection": "nodes"}) for k in right.kinds]
    assert check_bindings(GRAPH, right.model_copy(update={"kinds": renamed})) == [
        "record kind 'entity': collection 'nodes' is not the argument that creates it"
    ]
