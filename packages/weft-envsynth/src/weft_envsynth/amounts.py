"""Amounts moved between records: what a transfer, payment, withdrawal or deposit does to the
balances of the records it names.

A tool moves an amount when its name's verb moves money (`transfer`, `send`, `pay`, `withdraw`,
`deposit`, `fund`, `refund`, `charge`, ...) and it takes a numeric amount argument. Each record
argument (the tool's own key, or a reference to another entity) whose entity keeps a balance-like
number is debited or credited: the argument's role decides (`from_account_id` pays,
`to_account_id` / `receiver_id` receives), else the verb (`withdraw` debits the one account it
names, `deposit` credits it; a `transfer` naming one record without a role moves nothing, as the
other side is unknown). When the definition documents the constraint (insufficient funds, not
enough balance, may not exceed the balance, no overdraft), a debit below zero is refused and
nothing changes.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from weft_core.models import Entity, EntityModel, ToolContract, ToolSpec, WeftModel
from weft_envsynth._internal import words as W
from weft_envsynth._internal.jsonschema import schema_type

# Verb -> direction for the one record a tool names without a role (0: unknown without roles).
MOVE_VERBS: dict[str, int] = {
    "withdraw": -1, "pay": -1, "charge": -1, "debit": -1, "spend": -1, "deduct": -1,
    "deposit": 1, "fund": 1, "refund": 1, "credit": 1, "topup": 1, "reload": 1,
    "transfer": 0, "send": 0,
}  # fmt: skip
# What a move tool records when it keeps a row of its own (`transfer_funds(from, to, amount)`).
MOVE_RECORD = {
    "transfer": "transfer", "send": "transfer", "pay": "payment", "withdraw": "withdrawal",
    "deposit": "deposit", "fund": "deposit", "refund": "refund", "charge": "charge",
    "debit": "charge", "spend": "payment", "deduct": "charge", "credit": "deposit",
    "topup": "deposit", "reload": "deposit",
}  # fmt: skip
# Nouns that name the money, not a record (`withdraw_funds`, `send_money`).
MONEY_NOUNS = {"fund", "money", "cash", "payment", "amount", "balance", "credit", "point"}
DEBIT_ROLES = {"from", "source", "src", "sender", "payer", "origin", "debit", "withdraw"}
CREDIT_ROLES = {
    "to", "target", "destination", "dest", "dst", "receiver", "recipient", "payee",
    "beneficiary", "credit", "deposit",
}  # fmt: skip
AMOUNT_ARGS = {"amount", "sum", "value", "money", "funds", "payment", "total"}
_CONSTRAINT = re.compile(
    r"insufficient|not enough|sufficient (?:funds|balance)|exceed|overdraft|overdraw|"
    r"more than the (?:available )?balance|cannot go negative|must not be negative",
    re.IGNORECASE,
)


class AmountMove(WeftModel):
    """One balance a tool changes: `entity.field` of the row `argument` names, by `sign` x
    the value of `amount`."""

    argument: str
    entity: str
    field: str
    sign: int
    amount: str
    no_overdraft: bool = Field(
        default=False, description="The definition refuses a debit below zero."
    )


def move_verb(tool: ToolSpec) -> str | None:
    """The money-moving verb of the tool's name, when it has an amount argument to move."""
    if amount_argument(tool) is None:
        return None
    words = W.split_words(tool.name)
    joined = "".join(words)
    for w in words:
        if w in MOVE_VERBS:
            return w
    return "topup" if "topup" in joined else None


def amount_argument(tool: ToolSpec) -> str | None:
    """The numeric argument holding the amount moved (`amount`, `transfer_amount`)."""
    for arg, schema in tool.properties.items():
        ws = W.split_words(arg)
        if ws and ws[-1] in AMOUNT_ARGS and schema_type(schema) in {"number", "integer"}:
            return arg
    return None


def balance_field(entity: Entity) -> str | None:
    """The balance-like number an entity keeps (`balance`, `available_balance`, `funds`)."""
    for f in entity.fields:
        if f.primary_key or f.foreign_key or f.type not in {"number", "integer"}:
            continue
        ws = W.split_words(f.name)
        if "balance" in ws or f.name in {"funds", "credits", "points", "wallet"}:
            return f.name
    return None


def documents_constraint(tool: ToolSpec) -> bool:
    """The definition says a debit may not go below zero (insufficient funds, ...)."""
    texts = [tool.description]
    texts += [
        str(s.get("description", "")) for s in tool.properties.values() if isinstance(s, dict)
    ]
    out = tool.output_schema
    if isinstance(out, dict):
        texts.append(str(out)[:2000])
    return any(_CONSTRAINT.search(t) for t in texts)


def amount_moves(tool: ToolSpec, contract: ToolContract, model: EntityModel) -> list[AmountMove]:
    """The balances a tool's call changes (empty for every tool that moves no amount)."""
    verb = move_verb(tool)
    amount = amount_argument(tool)
    if verb is None or amount is None or contract.operation not in {"create", "update", "action"}:
        return []
    records: list[tuple[str, Entity]] = []
    for m in contract.mappings:
        target: Any = None
        if m.role == "key":
            target = contract.entity
        elif m.role == "reference" and m.field:
            fk = model.entity(contract.entity or "").field(m.field).foreign_key or ""
            target = fk.split(".")[0]
        if target:
            records.append((m.argument, model.entity(target)))
    guard = documents_constraint(tool)
    moves: list[AmountMove] = []
    for arg, ent in records:
        field = balance_field(ent)
        if field is None:
            continue
        words = set(W.split_words(arg))
        sign = -1 if words & DEBIT_ROLES else 1 if words & CREDIT_ROLES else MOVE_VERBS[verb]
        if sign == 0:
            continue
        moves.append(
            AmountMove(
                argument=arg,
                entity=ent.name,
                field=field,
                sign=sign,
                amount=amount,
                no_overdraft=guard and sign < 0,
            )
        )
    # Two records debited (or credited) by one call: the roles do not say which way it moves.
    if len(moves) > 1 and len({m.sign for m in moves}) == 1:
        return []
    return moves
