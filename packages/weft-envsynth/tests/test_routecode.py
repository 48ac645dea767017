"""Route code written by a (scripted) model: loaded in a restricted namespace, run in validation,
revised from the evidence of its failures, kept in the bundle and served when it passes."""

from __future__ import annotations

import asyncio
import gc
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from weft_core.binding import SessionBinding, bind_session, release_session
from weft_core.models import MCPSpec
from weft_core.testing import ScriptedChatModel
from weft_envsynth._internal.assemble import build_seed, write_sources
from weft_envsynth._templates.codert import CodeRefused, load_route
from weft_envsynth.analyze import analyze_programmatic
from weft_envsynth.backend import backend
from weft_envsynth.contracts import contracts
from weft_envsynth.graph import build_envsynth_graph
from weft_envsynth.loader import import_bundle, unload_bundle
from weft_envsynth.plans import BackendPlan
from weft_envsynth.routecode import code_targets, extract_code, write_route_code
from weft_envsynth.schema import schema_programmatic
from weft_envsynth.seed import seed_programmatic
from weft_envsynth.state import EnvSynthContext, EnvSynthState

GET_TICKET = """
def route(args, db):
    ticket = db.get("ticket", args.get("ticket_id"))
    if ticket is None:
        fail("not_found", f"ticket {args.get('ticket_id')!r} not found")
    return {"ticket": ticket}
"""

LIST_TICKETS = """
FILTERS = ("customer_id", "status", "priority", "employee_id")


def route(args, db):
    equals = {c: args[c] for c in FILTERS if args.get(c) is not None}
    rows = db.rows("ticket", **equals)
    limit = args.get("limit")
    n = min(int(limit), 500) if isinstance(limit, int) and limit >= 1 else 50
    items = rows[:n]
    return {"items": items, "count": len(items), "total": len(rows)}
"""

UPDATE_TICKET = """
FIELDS = ("subject", "description", "priority", "status")


def route(args, db):
    key = args["ticket_id"]
    if db.get("ticket", key) is None:
        fail("not_found", f"ticket {key!r} not found")
    changes = {f: args[f] for f in FIELDS if args.get(f) is not None}
    return {"ticket": db.update("ticket", key, changes)}
"""

# Wrong code a model realistically writes, and what the evidence handed back must show.
WRONG_UPDATE = {
    # forgets one of the fields: the stored row does not carry the argument
    "wrong_result": (UPDATE_TICKET.replace('"priority", "status")', '"priority")'), "status"),
    # reads an optional argument as if it were always given
    "exception": (
        UPDATE_TICKET.replace(
            "changes = {f: args[f] for f in FIELDS if args.get(f) is not None}",
            "changes = {f: args[f] for f in FIELDS}",
        ),
        "KeyError",
    ),
    "forbidden_import": ("import os\n" + UPDATE_TICKET, "import of 'os' is not allowed"),
    # waits for a condition that never changes
    "infinite_loop": (
        UPDATE_TICKET.replace(
            '    key = args["ticket_id"]\n',
            '    key = args["ticket_id"]\n    while db.get("ticket", key) is not None:\n'
            "        pass\n",
        ),
        "time limit",
    ),
    "syntax_error": (
        UPDATE_TICKET.replace("def route(args, db):", "def route(args, db)"),
        "syntax",
    ),
}


def _fenced(code: str) -> str:
    return f"Here is the route:\n```python\n{code.strip()}\n```\n"


class CodeModel:
    """Per-tool queues of code replies; a tool with no queue (or an empty one) gets prose.

    Records each prompt per tool so tests can read what the model was told."""

    def __init__(self, replies: dict[str, list[str]]) -> None:
        self.replies = {t: list(v) for t, v in replies.items()}
        self.prompts: dict[str, list[str]] = {}

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        prompt = str(messages[-1].content)
        tool = prompt.split("MCP tool ", 1)[1].split("'", 2)[1]
        self.prompts.setdefault(tool, []).append(prompt)
        queue = self.replies.get(tool)
        if not queue:
            return AIMessage(content="I would rather describe the route in words.")
        return AIMessage(content=_fenced(queue.pop(0)))


def _scripted(
    code: CodeModel, before: list[Any] | None = None, calls: int = 60
) -> ScriptedChatModel:
    return ScriptedChatModel([*(before or []), *([code] * calls)])


@pytest.fixture(scope="module")
def products(helpdesk_spec: MCPSpec) -> dict[str, Any]:
    a = analyze_programmatic(helpdesk_spec)
    m = schema_programmatic(helpdesk_spec, a)
    cs, _, _ = contracts(helpdesk_spec, a, m)
    plan, _ = backend(helpdesk_spec, m, cs)
    seed = seed_programmatic(m, helpdesk_spec, rows=6, reference_rows=8)
    return {"analysis": a, "model": m, "contracts": cs, "plan": plan, "seed": seed}


def _write(
    work: Path, spec: MCPSpec, p: dict[str, Any], llm: Any, *, rounds: int, tools: set[str]
) -> Any:
    """`write_route_code` on the module's helpdesk products."""
    return write_route_code(
        work, spec, p["model"], p["contracts"], p["plan"], llm, rounds=rounds, tools=tools
    )


def _work(tmp_path: Path, spec: MCPSpec, p: dict[str, Any]) -> Path:
    work = tmp_path / "work"
    write_sources(work, spec, p["model"], p["contracts"], p["plan"], format_code=False)
    build_seed(work, p["seed"])
    return work


async def _serve_call(bundle: Path, tool: str, args: dict[str, Any]) -> Any:
    from fastmcp import Client

    server_mod = import_bundle(bundle)
    sid = f"routecode-{bundle.name}"
    db = bundle.parent / "served.sqlite"
    try:
        with bind_session(
            SessionBinding(session_id=sid, db_path=db, workspace=bundle.parent / "ws")
        ):
            async with Client(server_mod.create_server()) as client:
                return await client.call_tool(tool, args, raise_on_error=False)
    finally:
        release_session(sid)
        unload_bundle(server_mod)


def test_code_targets_are_the_database_routes(products: dict[str, Any]) -> None:
    plan: BackendPlan = products["plan"]
    targets = code_targets(plan)
    assert {"get_ticket", "list_tickets", "update_ticket", "create_ticket"} <= set(targets)
    assert code_targets(plan, {"get_ticket", "nope"}) == ["get_ticket"]


def test_extract_code_takes_the_fenced_block() -> None:
    assert extract_code(_fenced("def route(args, db):\n    return {}")).startswith("def route")
    assert (
        extract_code("def route(args, db):\n    return {}")
        == "def route(args, db):\n    return {}\n"
    )
    assert extract_code("I would rather describe the route in words.") == ""


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("import subprocess\ndef route(args, db):\n    return {}\n", "import of 'subprocess'"),
        ("from os import path\ndef route(args, db):\n    return {}\n", "import from 'os'"),
        ("def route(args, db):\n    return open('/etc/passwd').read()\n", "NameError"),
        ("def route(args, db):\n    return db._session\n", "attribute '_session'"),
        ("def route(args, db):\n    return ().__class__.__bases__\n", "attribute '__bases__'"),
        ("def route(args, db):\n    g = (x for x in [1])\n    return g.gi_frame\n", "gi_frame"),
        ("def route(args, db):\n    return '{0.__class__}'.format(db)\n", "attribute 'format'"),
        ("def route(args, db):\n    try:\n        return {}\n    except:\n        pass\n", "bare"),
        ("def handler(args, db):\n    return {}\n", "defines no function route(args, db)"),
        ("import os\n", "import of 'os'"),
        (
            "def route(args, db):\n    try:\n        fail('x', 'y')\n    except Exception as e:\n"
            "        match e:\n            case Exception(__traceback__=tb):\n"
            "                return {'tb': tb}\n",
            "class pattern on a private attribute",
        ),
        # string.Formatter().get_field("0.__globals__", ...) would read any attribute path
        ("import string\ndef route(args, db):\n    return {}\n", "import of 'string'"),
        (
            "from functools import update_wrapper\ndef route(args, db):\n    return {}\n",
            "functools",
        ),
        ("def route(args, db)\n    return {}\n", "syntax error at line 1"),
    ],
)
def test_unsafe_or_malformed_code_is_refused_naming_the_tool(source: str, rule: str) -> None:
    try:
        route = load_route("get_ticket", source)
    except CodeRefused as exc:
        assert str(exc).startswith("get_ticket: route code refused")
        assert rule in str(exc)
        return
    # `open` is not a name route code can see: it fails when called, never reads a file
    with pytest.raises(NameError):
        route({}, None)
    assert rule == "NameError"


def test_allowed_module_does_not_lead_to_the_modules_it_imports() -> None:
    route = load_route("t", "import statistics\ndef route(args, db):\n    return statistics.sys\n")
    with pytest.raises(AttributeError):
        route({}, None)
    fine = load_route("t", "import math\ndef route(args, db):\n    return {'x': math.sqrt(9)}\n")
    assert fine({}, None) == {"x": 3.0}


def test_correct_code_passes_is_kept_and_served_without_the_model(
    tmp_path: Path, helpdesk_spec: MCPSpec, products: dict[str, Any]
) -> None:
    work = _work(tmp_path, helpdesk_spec, products)
    code = CodeModel({"get_ticket": [GET_TICKET], "list_tickets": [LIST_TICKETS]})
    llm = _scripted(code)
    plan, notes, outcomes = _write(
        work, helpdesk_spec, products, llm, rounds=2, tools={"get_ticket", "list_tickets"}
    )
    assert {t: o.status for t, o in outcomes.items()} == {
        "get_ticket": "served",
        "list_tickets": "served",
    }
    assert outcomes["get_ticket"].attempts == 1 and outcomes["get_ticket"].history == ["passed"]
    assert plan.route("get_ticket").code == extract_code(_fenced(GET_TICKET))
    assert plan.route("update_ticket").code is None
    assert "route code of 2 of 2 tool(s) passed validation" in notes[0]
    # the prompt states the signature, the tables and the result shape
    prompt = code.prompts["get_ticket"][0]
    assert "def route(args, db)" in prompt and "ticket(ticket_id: string key" in prompt
    # the code is in the bundle and the server runs it (no model involved any more)
    kept = sorted(p.name for p in (work / "routes_code").iterdir())
    assert kept == ["001_get_ticket.py", "002_list_tickets.py"]
    assert "routes_code/001_get_ticket.py" in (work / "server.py").read_text(encoding="utf-8")
    (work / "routes_code" / "001_get_ticket.py").write_text(
        GET_TICKET.replace('{"ticket": ticket}', '{"ticket": ticket, "served_by": "code"}'),
        encoding="utf-8",
    )
    res = asyncio.run(_serve_call(work, "get_ticket", {"ticket_id": "TIC-0001"}))
    assert not res.is_error and res.structured_content["served_by"] == "code"
    assert res.structured_content["ticket"]["ticket_id"] == "TIC-0001"
    missing = asyncio.run(_serve_call(work, "get_ticket", {"ticket_id": "TIC-9999"}))
    assert missing.is_error and "not_found" in str(missing.content[0])


@pytest.mark.parametrize("kind", sorted(WRONG_UPDATE))
def test_wrong_code_is_caught_and_revised_from_the_evidence(
    kind: str,
    tmp_path: Path,
    helpdesk_spec: MCPSpec,
    products: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEFT_ENVSYNTH_CODE_TIME_LIMIT_S", "0.5")
    wrong, shown = WRONG_UPDATE[kind]
    work = _work(tmp_path, helpdesk_spec, products)
    code = CodeModel({"update_ticket": [wrong, UPDATE_TICKET]})
    plan, _, outcomes = _write(
        work, helpdesk_spec, products, _scripted(code), rounds=2, tools={"update_ticket"}
    )
    out = outcomes["update_ticket"]
    assert out.status == "served" and out.attempts == 2 and out.history[-1] == "passed"
    assert shown in out.history[0]
    revision = code.prompts["update_ticket"][1]
    assert "Your previous code failed validation" in revision and wrong.strip() in revision
    assert shown in revision
    if kind in {"wrong_result", "exception", "infinite_loop"}:
        # executed: the evidence names the failing check, the call and the starting state
        assert re.search(r"check \w+ \(\w+\) failed: ", revision)
        assert "call update_ticket({" in revision
        assert "state: first rows of ticket before validation" in revision
    if kind in {"exception", "infinite_loop"}:
        assert "at line " in revision  # the traceback summary points into the code
    assert plan.route("update_ticket").code == UPDATE_TICKET.strip() + "\n"


def test_code_that_never_passes_leaves_the_planned_route_with_the_reason(
    tmp_path: Path, helpdesk_spec: MCPSpec, products: dict[str, Any]
) -> None:
    work = _work(tmp_path, helpdesk_spec, products)
    wrong = WRONG_UPDATE["wrong_result"][0]
    code = CodeModel({"update_ticket": [wrong, wrong]})
    plan, notes, outcomes = _write(
        work, helpdesk_spec, products, _scripted(code), rounds=1, tools={"update_ticket"}
    )
    out = outcomes["update_ticket"]
    assert out.status == "planned_route" and out.attempts == 2
    assert "no code passed in 2 attempt(s)" in out.reason and "status" in out.reason
    assert out.source == wrong.strip() + "\n"
    assert plan.route("update_ticket").code is None
    assert not (work / "routes_code").exists() and not (work / "codert.py").exists()
    assert "load_route(" not in (work / "server.py").read_text(encoding="utf-8")
    assert any("update_ticket keeps its planned route" in n for n in notes)
    # the planned route is what the bundle serves
    res = asyncio.run(
        _serve_call(work, "update_ticket", {"ticket_id": "TIC-0001", "status": "closed"})
    )
    assert not res.is_error and res.structured_content["ticket"]["status"] == "closed"


def test_graph_with_route_code_records_it_in_validation_json(
    tmp_path: Path,
    helpdesk_spec: MCPSpec,
    products: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEFT_ENVSYNTH_ROUTE_CODE", "true")
    monkeypatch.setenv("WEFT_ENVSYNTH_ROUTE_CODE_ROUNDS", "1")

    def tool_call(name: str, args: Any) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "c1"}])

    structured: list[Any] = [
        tool_call(
            "BindingAnswer",
            {"tools": [{"tool": t.name, "family": "none"} for t in helpdesk_spec.tools]},
        ),
        tool_call("Analysis", products["analysis"].model_dump(mode="json")),
        tool_call("EntityModel", products["model"].model_dump(mode="json")),
        tool_call("ContractSet", products["contracts"].model_dump(mode="json")),
        tool_call("BackendPlan", products["plan"].model_dump(mode="json")),
    ]
    code = CodeModel(
        {
            "get_ticket": [GET_TICKET],
            "update_ticket": [WRONG_UPDATE["exception"][0], UPDATE_TICKET],
        }
    )
    graph = build_envsynth_graph()
    state = EnvSynthState(spec=helpdesk_spec, out_dir=str(tmp_path / "out"), rounds=2)
    final = EnvSynthState.model_validate(
        graph.invoke(state, context=EnvSynthContext(llm=_scripted(code, structured)))
    )
    assert final.manifest is not None and final.bundle_path is not None
    assert final.manifest.certified and all(t.certified for t in final.manifest.tools)
    bundle = Path(final.bundle_path)
    data = json.loads((bundle / "validation.json").read_text(encoding="utf-8"))
    rc = data["route_code"]
    assert rc["get_ticket"]["status"] == "served"
    assert rc["update_ticket"]["status"] == "served" and rc["update_ticket"]["attempts"] == 2
    assert rc["create_ticket"]["status"] == "planned_route"
    assert "defines no function route" in rc["create_ticket"]["reason"]
    assert (bundle / "routes_code" / "001_get_ticket.py").read_text(encoding="utf-8") == (
        GET_TICKET.strip() + "\n"
    )
    assert "routes_code/001_get_ticket.py" in final.manifest.files
    # the certified bundle serves the model's code with no model
    res = asyncio.run(
        _serve_call(bundle, "update_ticket", {"ticket_id": "TIC-0002", "priority": "urgent"})
    )
    assert not res.is_error and res.structured_content["ticket"]["priority"] == "urgent"


def _run_on_seed(
    work: Path, source: str, args: dict[str, Any]
) -> tuple[dict[str, Any] | str, list[Any]]:
    """Run route code on a copy of the bundle's seed DB: (result or error text, ticket keys)."""
    import shutil
    import sys

    import sqlalchemy as sa
    from sqlmodel import Session

    from weft_envsynth._templates.codert import run_route

    server_mod = import_bundle(work)
    models = sys.modules[server_mod.__name__.rsplit(".", 1)[0] + ".models"]
    db = work.parent / "direct.sqlite"
    shutil.copyfile(work / "seed.sqlite", db)
    engine = sa.create_engine(f"sqlite:///{db}", poolclass=sa.pool.NullPool)
    try:
        with Session(engine) as session:
            try:
                out: dict[str, Any] | str = run_route(
                    load_route("t", source), args, session, models
                )
            except Exception as exc:
                out = f"{getattr(exc, 'code', '')}: {getattr(exc, 'message', exc)}"
        with engine.connect() as conn:
            keys = [r[0] for r in conn.exec_driver_sql("SELECT ticket_id FROM ticket")]
    finally:
        engine.dispose()
        unload_bundle(server_mod)
    return out, keys


def test_route_code_runs_in_one_transaction_under_a_time_limit(
    tmp_path: Path,
    helpdesk_spec: MCPSpec,
    products: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEFT_ENVSYNTH_CODE_TIME_LIMIT_S", "0.5")
    work = _work(tmp_path, helpdesk_spec, products)
    insert = 'row = db.insert("ticket", {"subject": "x", "customer_id": "CUS-0001"})\n'
    ok, keys = _run_on_seed(work, f"def route(args, db):\n    {insert}    return row\n", {})
    assert isinstance(ok, dict) and ok["ticket_id"] in keys
    # a route that fails after writing leaves nothing behind (each run starts from the seed)
    before = len(keys) - 1
    err, keys = _run_on_seed(
        work, f"def route(args, db):\n    {insert}    fail('conflict', 'no')\n", {}
    )
    assert err == "conflict: no" and len(keys) == before
    err, keys = _run_on_seed(work, f"def route(args, db):\n    {insert}    return {{}}['x']\n", {})
    assert str(err).startswith("internal_error: route code failed at line 3")
    assert "KeyError" in str(err) and len(keys) == before
    # `except Exception` cannot swallow the time limit
    looping = (
        "def route(args, db):\n    while True:\n        try:\n            db.get('ticket', 'x')\n"
        "        except Exception:\n            pass\n"
    )
    err, _ = _run_on_seed(work, looping, {})
    assert str(err).startswith("internal_error: route code ran past its 0.5 s time limit")
    # a C-level loop the time limit cannot interrupt is refused by size
    err, _ = _run_on_seed(work, "def route(args, db):\n    return {'n': sum(range(10**12))}\n", {})
    assert "range of 1000000000000 items" in str(err)
    # results are JSON; something else is an error
    err, _ = _run_on_seed(work, "def route(args, db):\n    return [1]\n", {})
    assert err == "internal_error: route code returned list, not a dict"


def test_a_garbage_collection_during_route_code_is_not_the_code_s_time(
    tmp_path: Path,
    helpdesk_spec: MCPSpec,
    products: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A host's full collection can take longer than the limit (0.6 s measured in this suite)."""
    monkeypatch.setenv("WEFT_ENVSYNTH_CODE_TIME_LIMIT_S", "0.3")
    work = _work(tmp_path, helpdesk_spec, products)

    def slow_collection(phase: str, info: dict[str, Any]) -> None:
        # Stands for a large heap: 0.1 s of CPU inside each collection (callbacks run in list
        # order, so at "stop" this runs before the route's own callback closes the interval).
        if phase == "stop":
            end = time.thread_time() + 0.1
            while time.thread_time() < end:
                pass

    # Cheap code that allocates: the collections it triggers cost far more than the code.
    allocating = (
        "def route(args, db):\n    rows = [[i] for i in range(20000)]\n"
        "    return {'n': len(rows)}\n"
    )
    gc.callbacks.append(slow_collection)
    try:
        out, _ = _run_on_seed(work, allocating, {})
    finally:
        gc.callbacks.remove(slow_collection)
    assert out == {"n": 20000}
