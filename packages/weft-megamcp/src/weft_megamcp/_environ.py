"""Scrubbing a secret from this process's environment after it was read.

`os.environ.pop` only unlinks the variable from libc's `environ` array: the bytes stay in the
initial environment block the kernel shows as /proc/<pid>/environ (to processes of the same
user) and every child would inherit the variable if it were still in os.environ. The admin
token is read once at startup; afterwards neither place holds it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from pathlib import Path


def _environ_block() -> tuple[int, int] | None:
    """(start, end) addresses of the initial environment block (fields 50/51 of stat)."""
    stat = Path("/proc/self/stat").read_text(encoding="ascii", errors="replace")
    fields = stat[stat.rindex(")") + 2 :].split()  # fields[0] is field 3 (state)
    start, end = int(fields[47]), int(fields[48])
    return (start, end) if 0 < start < end else None


def scrub_environ(name: str) -> bool:
    """Remove `name` from os.environ and blank its value in the environment block; True when
    the variable was set."""
    value = os.environ.pop(name, None)
    if value is None:
        return False
    if not sys.platform.startswith("linux") or not value:
        return True
    with contextlib.suppress(OSError, ValueError, IndexError):
        span = _environ_block()
        if span is None:
            return True
        start, end = span
        block = ctypes.string_at(start, end - start)
        entry = f"{name}=".encode() + os.fsencode(value)
        at = block.find(entry)
        while at >= 0 and (at == 0 or block[at - 1] == 0):
            ctypes.memset(start + at + len(name) + 1, ord("x"), len(entry) - len(name) - 1)
            at = block.find(entry, at + 1)
    return True
