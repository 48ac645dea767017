"""Validation of version-control tools (vcssem): each verb's effect is read back from the session
DB's repository tables and the workspace with sqlite3 beside the tool (a staged file is in the
index, a commit is in the history, a branch points at a commit), and the refusals a repository
has (unknown revision, missing file, path outside, nothing to commit, duplicate branch)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth.vcssem import VcsSemantics


def _mentions(want: str) -> Callable[[Any, str], str | None]:
    def check(data: Any, text: str) -> str | None:
        seen = json.dumps(data, default=str) + text
        return None if want in seen else f"result does not mention {want!r}: {text[:120]}"

    return check


def _nothing(data: Any, text: str) -> str | None:
    return None


class VcsChecks:
    """Mixin of the validator: needs `call`, `record`, `expect_error`, `spec`, `db`, `ws` and
    `vcs_tools` (tool name -> semantics)."""

    call: Any
    record: Any
    expect_error: Any
    spec: MCPSpec
    db: Path
    ws: Path
    vcs_tools: dict[str, VcsSemantics]
    _vcs_n: int = 0

    def _vcs_rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(str(self.db), timeout=30)
        try:
            return list(conn.execute(sql, params))
        except sqlite3.OperationalError:  # no repository yet
            return []
        finally:
            conn.close()

    def _head(self) -> tuple[str | None, str | None]:
        rows = self._vcs_rows("SELECT ref, sha FROM weft_vcs_head")
        if not rows:
            return None, None
        ref, sha = rows[0]
        if ref is not None:
            got = self._vcs_rows("SELECT sha FROM weft_vcs_ref WHERE name = ?", (ref,))
            return str(ref), str(got[0][0]) if got else None
        return None, sha

    def _args(self, sem: VcsSemantics, **values: Any) -> dict[str, Any]:
        by_role = {"repo": str(self.ws), **values}
        out = {a: by_role[r] for a, r in sem.roles.items() if r in by_role}
        for a, choices in sem.choices.items():
            out.setdefault(a, choices[0])
        return out

    def _other(self, verb: str) -> tuple[str, VcsSemantics] | None:
        return next(((n, s) for n, s in self.vcs_tools.items() if s.verb == verb), None)

    def _fresh(self, stem: str) -> str:
        self._vcs_n += 1
        return f"{stem}{self._vcs_n}"

    def _new_file(self) -> str:
        name = self._fresh("vcs_probe_") + ".txt"
        (self.ws / name).write_text(f"probe {name}\n", encoding="utf-8")
        return name

    async def _ok(self, tool: ToolSpec, name: str, args: dict[str, Any], problem: Any) -> Any:
        res = await self.call(tool.name, args)
        why = f"valid call failed: {res.text}" if res.is_error else problem(res.data, res.text)
        self.record(tool.name, name, "query", why is None, "runtime", why or "", args)
        return None if res.is_error else res.data

    async def _stage(self, file: str) -> bool:
        add = self._other("add")
        if add is None:
            return False
        res = await self.call(add[0], self._args(add[1], files=[file]))
        return not res.is_error

    async def vcs_checks(self, tool: ToolSpec, sem: VcsSemantics) -> None:
        verb = sem.verb
        if not self._vcs_rows("SELECT 1 FROM weft_vcs_head"):
            # The repository starts at first use with the workspace's files as its first commit;
            # start it before the probes write files that must show as new.
            reader = self._other("status") or self._other("log")
            if reader is not None:
                await self.call(reader[0], self._args(reader[1]))
        if verb == "status":
            f = self._new_file()
            await self._ok(tool, "vcs_status_shows_untracked", self._args(sem), _mentions(f))
        elif verb in {"diff_unstaged", "diff_staged"}:
            await self._ok(tool, f"vcs_{verb}", self._args(sem), _nothing)
        elif verb in {"diff", "show"}:
            head = self._head()[1] or ""
            want = _mentions(head) if verb == "show" else _nothing
            await self._ok(tool, f"vcs_{verb}_head", self._args(sem, revision="HEAD"), want)
            await self.expect_error(
                tool, f"vcs_{verb}_unknown_revision",
                self._args(sem, revision="no-such-revision-0"), "runtime", "an unknown revision",
            )  # fmt: skip
        elif verb == "log":
            head = self._head()[1] or ""
            await self._ok(tool, "vcs_log_shows_head", self._args(sem), _mentions(head))
        elif verb == "branches":
            branch = self._head()[0] or ""
            await self._ok(tool, "vcs_branches_current", self._args(sem), _mentions(branch))
            for arg, choices in sem.choices.items():
                bad = self._args(sem) | {arg: "-".join(choices) + "-x"}
                await self.expect_error(
                    tool, "vcs_branches_bad_choice", bad, "runtime", f"a {arg} outside {choices}"
                )
        elif verb == "add":
            f = self._new_file()
            await self._ok(
                tool, "vcs_add_stages", self._args(sem, files=[f]),
                lambda d, t: None if self._vcs_rows("SELECT 1 FROM weft_vcs_index WHERE path = ?", (f,))
                else f"{f} is not in the index after staging",
            )  # fmt: skip
            for missing, why in (
                ("no_such_file_0.txt", "a missing file"),
                ("../outside.txt", "a path outside"),
            ):
                await self.expect_error(
                    tool, "vcs_add_refuses", self._args(sem, files=[missing]), "runtime", why
                )
        elif verb == "reset":
            f = self._new_file()
            staged = await self._stage(f)
            q = "SELECT 1 FROM weft_vcs_index WHERE path = ?"
            await self._ok(
                tool, "vcs_reset_unstages", self._args(sem),
                lambda d, t: None if not staged or not self._vcs_rows(q, (f,)) else "still staged",
            )  # fmt: skip
        elif verb == "commit":
            msg = self._fresh("probe commit ")
            if await self._stage(self._new_file()):
                await self._ok(
                    tool, "vcs_commit_records", self._args(sem, message=msg),
                    lambda d, t: None if self._vcs_rows("SELECT 1 FROM weft_vcs_commit WHERE message = ?", (msg,))
                    else "no commit with the message in the history",
                )  # fmt: skip
            await self.expect_error(
                tool, "vcs_commit_nothing_staged", self._args(sem, message=msg), "runtime",
                "a commit with nothing staged",
            )  # fmt: skip
        elif verb == "create_branch":
            name = self._fresh("probe-branch-")
            await self._ok(
                tool, "vcs_branch_created", self._args(sem, name=name),
                lambda d, t: None if self._vcs_rows("SELECT 1 FROM weft_vcs_ref WHERE name = ?", (name,))
                else f"no branch {name}",
            )  # fmt: skip
            await self.expect_error(
                tool,
                "vcs_branch_exists",
                self._args(sem, name=name),
                "runtime",
                "an existing branch",
            )
        elif verb == "checkout":
            current = self._head()[0]
            make = self._other("create_branch")
            name = self._fresh("probe-switch-")
            if make is not None and current:
                await self.call(make[0], self._args(make[1], name=name))
                await self._ok(
                    tool, "vcs_checkout_switches", self._args(sem, name=name),
                    lambda d, t: None if self._head()[0] == name else f"HEAD is not on {name}",
                )  # fmt: skip
                await self.call(tool.name, self._args(sem, name=current))
            await self.expect_error(
                tool, "vcs_checkout_unknown", self._args(sem, name="no-such-branch-0"), "runtime",
                "an unknown branch",
            )  # fmt: skip
