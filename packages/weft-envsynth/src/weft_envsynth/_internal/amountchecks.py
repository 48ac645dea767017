"""Validation of amounts moved between records (amounts.py): a call changes exactly the balances
it names, by the amount, and a documented overdraft is refused with nothing changed."""

from __future__ import annotations

from typing import Any

from weft_envsynth._internal.dbstate import Rows, same_value
from weft_envsynth.amounts import AmountMove


def moved_rows(moves: list[AmountMove], args: dict[str, Any]) -> dict[str, set[Any]]:
    """entity -> keys of the rows whose balances the call moves."""
    out: dict[str, set[Any]] = {}
    for mv in moves:
        if args.get(mv.argument) is not None and args.get(mv.amount) is not None:
            out.setdefault(mv.entity, set()).add(args[mv.argument])
    return out


def only_moved(table_diff: dict[str, Any], keys: set[Any] | None) -> bool:
    """The table's change is updates of moved rows only."""
    if not keys or table_diff.get("inserted") or table_diff.get("deleted"):
        return False
    return set(table_diff.get("updated", [])) <= keys


def moves_problem(
    moves: list[AmountMove], args: dict[str, Any], before: Rows, after: Rows
) -> str | None:
    """What a successful call got wrong about the balances it moves (None when right). Rows
    that appear twice (a transfer from an account to itself) net out."""
    expected: dict[tuple[str, Any, str], float] = {}
    for mv in moves:
        key, amount = args.get(mv.argument), args.get(mv.amount)
        if key is None or not isinstance(amount, int | float):
            continue
        old = (before.get(mv.entity, {}).get(key) or {}).get(mv.field)
        slot = (mv.entity, key, mv.field)
        expected[slot] = expected.get(slot, float(old or 0)) + mv.sign * amount
    for (entity, key, field), want in expected.items():
        row = after.get(entity, {}).get(key)
        if row is None:
            return f"{entity} {key!r} named by the call is not in the DB"
        if not same_value(float(row.get(field) or 0), want):
            return f"{entity} {key!r} {field} should be {want!r} after the call, DB has {row.get(field)!r}"
    return None


def overdraft_refused(
    moves: list[AmountMove], args: dict[str, Any], before: Rows, error_text: str
) -> bool:
    """A refusal the definition documents: the call would take a balance below zero."""
    if "insufficient_funds" not in error_text:
        return False
    for mv in moves:
        key, amount = args.get(mv.argument), args.get(mv.amount)
        if not mv.no_overdraft or key is None or not isinstance(amount, int | float):
            continue
        old = (before.get(mv.entity, {}).get(key) or {}).get(mv.field)
        if float(old or 0) - amount < 0:
            return True
    return False
