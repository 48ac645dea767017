"""Seed values in the format of a field's examples (examples.py).

The first rows hold the examples themselves; later rows hold values shaped like them: the digit
runs of "TIC-0001" become other digits of the same width (TIC-0417; a key counts on from it,
TIC-0002), a short upper-case token ("AAPL") becomes another of its length, an email keeps its
domain, a date moves within half a year of it, a plain word or name is reused.

Like every seed value, a value depends only on the examples, the entity, the field and the row,
never on which MCP asks: a shared entity (customer CUS-0001 in a CRM and in an orders MCP) stays
shared across MCPs whose definitions give its fields the same examples, or none. Where two MCPs
document different examples for the same field (one says "customer_id: e.g. C-1042", the other
nothing), each bundle seeds its own (C-1042, C-4711 ... against CUS-0001 ...): those rows are not
shared, and a cross-MCP task over that entity has to read its ids from each bundle's seed.
"""

from __future__ import annotations

import datetime as dt
import re
import string
from collections.abc import Callable
from typing import Any

from faker import Faker

from weft_core.models.env import FieldType
from weft_envsynth.examples import Scalar

_DIGITS = re.compile(r"\d+")
_EMAIL = re.compile(r"[^@\s]+@([^@\s]+\.[A-Za-z]{2,})")
_TICKER = re.compile(r"[A-Z]{1,5}")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_ISO_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}.*")
_TRIES = 32


def example_value(examples: list[Scalar], ftype: FieldType, i: int, fake: Faker) -> Scalar:
    """Row `i`'s value: example `i` while there are examples, then one in their format
    (`fake` is seeded for this entity, field and row)."""
    if i < len(examples):
        return examples[i]
    t = examples[i % len(examples)]
    if ftype == "boolean" or isinstance(t, bool):
        return i % 2 == 0
    if ftype == "integer" and isinstance(t, int):
        return _integer(examples, t, fake)
    if ftype == "number" and isinstance(t, int | float):
        return _number(examples, t, fake)
    return _shaped(str(t), i, fake)


def unique_column(
    examples: list[Scalar], ftype: FieldType, count: int, fake: Callable[[int, int], Faker]
) -> list[Scalar]:
    """`count` distinct values for a key or a unique field: the examples, then values in their
    format. A key of digits counts on from its example (TIC-0001, TIC-0002, ...), as ids do.
    `fake(row, attempt)` is the Faker seeded for one try at one row."""
    out: list[Scalar] = list(dict.fromkeys(examples))[:count]
    taken: set[Any] = set(out)
    ints = [x for x in examples if isinstance(x, int) and not isinstance(x, bool)]
    top = max(ints, default=0)
    n = len(examples)
    while len(out) < count:
        row = len(out)
        t = examples[row % n]
        value: Scalar | None = None
        if ftype == "integer":
            top += 1
            value = top
        elif isinstance(t, str) and _DIGITS.search(t) and not _is_date(t):
            step = row // n
            for _ in range(count * _TRIES):
                candidate = _count_on(t, step)
                if candidate not in taken:
                    value = candidate
                    break
                step += 1
        else:
            for attempt in range(_TRIES):
                other = example_value(examples, ftype, row, fake(row, attempt))
                if other not in taken:
                    value = other
                    break
        if value is None:  # a format with too few values (a one-letter code): make it distinct
            value = f"{t}-{row + 1}"
        taken.add(value)
        out.append(value)
    return out


def _count_on(t: str, step: int) -> str:
    """`t` with its last digit run advanced by `step`, keeping its width (TIC-0001 -> TIC-0002)."""
    last = list(_DIGITS.finditer(t))[-1]
    run = last.group()
    return f"{t[: last.start()]}{int(run) + step:0{len(run)}d}{t[last.end() :]}"


def _integer(examples: list[Any], t: int, fake: Faker) -> int:
    ints = [x for x in examples if isinstance(x, int) and not isinstance(x, bool)]
    lo, hi = min(ints), max(ints)
    if lo == hi:  # one value: another of as many digits (42 -> 10 .. 99, 2 -> 1 .. 9, 0 -> 0 .. 9)
        width = len(str(abs(t)))
        lo, hi = (10 ** (width - 1) if t else 0), 10**width - 1
        return int(fake.random.randint(lo, hi)) * (-1 if t < 0 else 1)
    return int(fake.random.randint(lo, hi))


def _number(examples: list[Scalar], t: float, fake: Faker) -> float:
    nums = [float(x) for x in examples if isinstance(x, int | float) and not isinstance(x, bool)]
    if all(x.is_integer() for x in nums):  # `adults: 2`, `port: 3306`: whole numbers stay whole
        return _integer([int(x) for x in nums], int(t), fake)
    lo, hi = min(nums), max(nums)
    if lo == hi:
        lo, hi = sorted((t * 0.5, t * 1.5)) if t else (0.0, 1.0)
    decimals = max((len(repr(x).split(".")[1]) for x in nums if "." in repr(x)), default=2)
    return round(float(fake.random.uniform(lo, hi)), min(decimals, 4))


def _shaped(t: str, i: int, fake: Faker) -> str:
    if m := _EMAIL.fullmatch(t):
        return f"{fake.user_name()}{i + 1}@{m.group(1)}".lower()
    if _is_date(t):
        return _shift_date(t, fake)
    if _DIGITS.search(t):
        return _DIGITS.sub(lambda d: _digits(d.group(), fake), t)
    if _TICKER.fullmatch(t):
        return "".join(fake.random.choice(string.ascii_uppercase) for _ in t)
    return t  # a word or a name has no format to vary: the examples recur


def _digits(run: str, fake: Faker) -> str:
    # A leading digit that was not zero stays non-zero: "42" does not become "07", "1d" not "0d".
    first = "123456789" if run[0] != "0" else string.digits
    rest = "".join(fake.random.choice(string.digits) for _ in run[1:])
    return str(fake.random.choice(first)) + rest


def _is_date(t: str) -> bool:
    return bool(_ISO_DATE.fullmatch(t) or _ISO_DATETIME.fullmatch(t))


def _shift_date(t: str, fake: Faker) -> str:
    days = fake.random.randint(-180, 180)
    try:
        if _ISO_DATE.fullmatch(t):
            return (dt.date.fromisoformat(t) + dt.timedelta(days=days)).isoformat()
        zulu = t.endswith("Z")
        moved = dt.datetime.fromisoformat(t.replace("Z", "+00:00")) + dt.timedelta(
            days=days, seconds=fake.random.randint(0, 86399)
        )
    except ValueError:
        return t
    out = moved.isoformat(sep=t[10], timespec="seconds")
    return out.replace("+00:00", "Z") if zulu else out
