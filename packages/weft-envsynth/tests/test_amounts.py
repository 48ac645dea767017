"""Amounts moved between records (amounts.py): transfers, withdrawals, deposits and payments
change the balances of the records they name; a documented overdraft is refused; a reference to
an unknown record is refused; validation catches a route that leaves the balances alone."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth._internal.assemble import build_seed, write_sources
from weft_envsynth.amounts import amount_moves
from weft_envsynth.analyze import analyze_programmatic
from weft_envsynth.backend import backend
from weft_envsynth.contracts import contracts
from weft_envsynth.schema import schema_programmatic
from weft_envsynth.seed import seed_programmatic
from weft_envsynth.validate import validate

S: dict[str, Any] = {"type": "string"}
N: dict[str, Any] = {"type": "number"}


def _tool(
    name: str,
    props: dict[str, Any],
    required: list[str] | None = None,
    desc: str = "",
    out: dict[str, Any] | None = None,
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": required or []},
        output_schema=out,
    )


def bank(
    withdraw_desc: str = "Withdraw money from an account. Fails on insufficient funds.",
) -> MCPSpec:
    return MCPSpec(
        name="Bank",
        tools=[
            _tool("open_account", {"owner": S, "initial_balance": N}, ["owner"], "Open an account"),
            _tool("get_account", {"account_id": S}, ["account_id"], "Get an account"),
            _tool("deposit", {"account_id": S, "amount": N}, ["account_id", "amount"], "Deposit"),
            _tool(
                "withdraw", {"account_id": S, "amount": N}, ["account_id", "amount"], withdraw_desc
            ),
            _tool(
                "transfer_funds",
                {"from_account_id": S, "to_account_id": S, "amount": N},
                ["from_account_id", "to_account_id", "amount"],
                "Transfer money between accounts; refused when the source has insufficient funds",
            ),
        ],
    )


def test_moves_follow_roles_and_verbs_and_the_documented_constraint() -> None:
    spec = bank()
    a = analyze_programmatic(spec)
    m = schema_programmatic(spec, a)
    cs, _, failed = contracts(spec, a, m)
    assert failed == {}
    assert {f.name for f in m.entity("account").fields} >= {"balance"}  # initial_balance is it
    assert "initial_balance" not in {f.name for f in m.entity("account").fields}

    def moves(tool: str) -> set[tuple[str, str, int, bool]]:
        got = amount_moves(spec.tool(tool), cs.contract(tool), m)
        return {(x.argument, x.field, x.sign, x.no_overdraft) for x in got}

    assert moves("deposit") == {("account_id", "balance", 1, False)}
    assert moves("withdraw") == {("account_id", "balance", -1, True)}
    assert moves("transfer_funds") == {
        ("from_account_id", "balance", -1, True),
        ("to_account_id", "balance", 1, False),
    }
    transfer = cs.contract("transfer_funds")
    assert transfer.operation == "create" and transfer.entity == "transfer"
    assert "account.balance" in transfer.writes  # a transfer touches two entities
    # Undocumented: a withdrawal may overdraw.
    loose = bank("Withdraw money from an account.")
    a2 = analyze_programmatic(loose)
    m2 = schema_programmatic(loose, a2)
    cs2, _, _ = contracts(loose, a2, m2)
    got = amount_moves(loose.tool("withdraw"), cs2.contract("withdraw"), m2)
    assert [x.no_overdraft for x in got] == [False]


def test_hostile_definitions_move_nothing() -> None:
    spec = MCPSpec(
        name="Odd",
        tools=[
            _tool("open_account", {"owner": S, "balance": N}, ["owner"], "Open an account"),
            # two records, no roles: which way the money goes is not said
            _tool(
                "transfer",
                {"account_id": S, "other_account_id": S, "amount": N},
                ["account_id", "other_account_id", "amount"],
                "Transfer",
            ),
            # an amount that is text is no amount
            _tool("deposit", {"account_id": S, "amount": S}, ["account_id"], "Deposit"),
            # a verb that moves nothing
            _tool("rename_account", {"account_id": S, "amount": N}, ["account_id"], "Rename"),
        ],
    )
    a = analyze_programmatic(spec)
    m = schema_programmatic(spec, a)
    cs, _, _ = contracts(spec, a, m)
    for tool in ("transfer", "deposit", "rename_account"):
        assert amount_moves(spec.tool(tool), cs.contract(tool), m) == [], tool


def _bundle(tmp: Path, spec: MCPSpec, fault: tuple[str, str, str] | None = None) -> Any:
    a = analyze_programmatic(spec)
    m = schema_programmatic(spec, a)
    cs, _, _ = contracts(spec, a, m)
    plan, _ = backend(spec, m, cs)
    write_sources(tmp, spec, m, cs, plan, format_code=False)
    build_seed(tmp, seed_programmatic(m, spec))
    if fault:
        route, old, new = fault
        src = (tmp / "server.py").read_text()
        head, body = src.split(f"def tool_{route}(", 1)
        assert old in body, body[:800]
        (tmp / "server.py").write_text(head + f"def tool_{route}(" + body.replace(old, new, 1))
    return validate(tmp, spec, m, cs)


def test_validation_certifies_moves_and_catches_a_route_that_moves_nothing(tmp_path: Path) -> None:
    good = _bundle(tmp_path / "good", bank())
    assert good.failing_tools() == {}
    bad = _bundle(tmp_path / "bad", bank(), ("deposit", "move_amount(", "(lambda *a: None)("))
    failing = bad.failing_tools()
    assert set(failing) == {"deposit"}
    assert "balance should be" in failing["deposit"][0].detail


@pytest.fixture(scope="module")
def bank_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_envsynth import synthesize_spec

    res = synthesize_spec(bank(), tmp_path_factory.mktemp("bank"))
    assert res.bundle is not None and res.status == "certified", res.uncertified
    return Path(res.bundle)


def _run(bundle: Path, tmp: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth.loader import import_bundle, unload_bundle

    tmp.mkdir(parents=True, exist_ok=True)
    db = tmp / "state.sqlite"
    shutil.copyfile(bundle / "seed.sqlite", db)
    mod = import_bundle(bundle)
    out: list[Any] = []

    async def go() -> None:
        with bind_session(
            SessionBinding(session_id=f"t-{tmp.name}", db_path=db, workspace=tmp / "ws")
        ):
            async with Client(mod.create_server()) as c:
                for name, args in calls:
                    r = await c.call_tool(name, args, raise_on_error=False)
                    out.append(("error", r.content[0].text) if r.is_error else r.structured_content)

    try:
        asyncio.run(go())
    finally:
        release_session(f"t-{tmp.name}")
        unload_bundle(mod)
    return out


def test_a_bank_moves_money_between_the_accounts_it_names(
    bank_bundle: Path, tmp_path: Path
) -> None:
    a = _run(
        bank_bundle, tmp_path / "a", [("open_account", {"owner": "ann", "initial_balance": 100})]
    )
    assert a[0]["account"]["balance"] == 100  # the opening balance is the balance
    ann = a[0]["account"]["account_id"]
    got = _run(
        bank_bundle,
        tmp_path / "c",
        [
            ("open_account", {"owner": "ann", "initial_balance": 100}),
            ("open_account", {"owner": "bob", "initial_balance": 5}),
            ("withdraw", {"account_id": ann, "amount": 30}),
            ("withdraw", {"account_id": ann, "amount": 500}),  # documented: insufficient funds
            ("get_account", {"account_id": ann}),
        ],
    )
    bob = got[1]["account"]["account_id"]  # ids follow from the state: the same in every run
    assert got[2]["account"]["balance"] == 70
    assert got[3][0] == "error" and "insufficient_funds" in got[3][1]
    assert got[4]["account"]["balance"] == 70  # the refused withdrawal changed nothing
    got = _run(
        bank_bundle,
        tmp_path / "d",
        [
            ("open_account", {"owner": "ann", "initial_balance": 100}),
            ("open_account", {"owner": "bob", "initial_balance": 5}),
            ("transfer_funds", {"from_account_id": ann, "to_account_id": bob, "amount": 60}),
            ("transfer_funds", {"from_account_id": ann, "to_account_id": "ACC-NONE", "amount": 1}),
            ("transfer_funds", {"from_account_id": ann, "to_account_id": bob, "amount": 41}),
            ("get_account", {"account_id": ann}),
            ("get_account", {"account_id": bob}),
            ("deposit", {"account_id": bob, "amount": 10}),
        ],
    )
    assert got[2]["transfer"]["amount"] == 60
    assert got[3][0] == "error" and "not_found" in got[3][1]  # unknown reference refused
    assert got[4][0] == "error" and "insufficient_funds" in got[4][1]
    assert got[5]["account"]["balance"] == 40 and got[6]["account"]["balance"] == 65
    assert got[7]["account"]["balance"] == 75
