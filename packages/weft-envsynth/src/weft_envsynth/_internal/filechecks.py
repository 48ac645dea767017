"""Validation of workspace (file) tools: calls checked against the workspace diff and file contents."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

from weft_core.models import MCPSpec, ToolContract, ToolSpec
from weft_envsynth._internal.dbstate import read_workspace
from weft_envsynth.analyze import file_tool_set
from weft_envsynth.bindings import ToolBindings
from weft_envsynth.filesem import (
    READ_VERBS,
    FileSemantics,
    MediaResult,
    TextResult,
    edit_pairs,
    media_result,
    text_result,
)
from weft_envsynth.plans import IssueCategory

# The validation workspace (validate.SEED_FILES) these probes are written against.
_DIR, _FILE, _FILE2, _LINE = "notes", "README.md", "reports/q1.csv", "- review open tickets"


def error_category(text: str) -> IssueCategory:
    """Where a valid call's error points: the schema, the contract, or the backend."""
    low = text.lower()
    if (
        "no such table" in low
        or "no such column" in low
        or low.startswith("conflict: constraint failed")
    ):
        return "structural"
    if low.startswith("not_found") or low.startswith("invalid_state"):
        return "mapping"
    return "runtime"


_TEXT_READS = {"read", "read_many", "info", "list", "tree", "search", "roots"}


class WorkspaceChecks:
    """Mixin of the validator: needs `ws`, `call`, `record`, `build_args`, `expect_error`."""

    ws: Path
    db: Path
    spec: MCPSpec
    bindings: ToolBindings | None
    seed_files: dict[str, str]
    call: Any
    record: Any
    build_args: Any
    expect_error: Any

    def _reset_workspace(self) -> None:
        """Back to the seed files and the root directory, so each probe starts from the same state."""
        shutil.rmtree(self.ws, ignore_errors=True)
        for rel, text in self.seed_files.items():
            p = self.ws / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        conn = sqlite3.connect(self.db)
        try:
            conn.execute("DROP TABLE IF EXISTS weft_cwd")
            conn.commit()
        finally:
            conn.close()

    def _probe_args(self, sem: FileSemantics) -> dict[str, Any]:
        by_role = {role: arg for arg, role in sem.roles.items()}
        v = sem.verb
        values: dict[str, Any] = {}
        path = {
            "navigate": _DIR,
            "list": _DIR,
            "find": ".",
            "usage": _DIR,
            "write": "new_note.txt",
            "touch": "empty.txt",
            "mkdir": "new_folder",
            "move": "notes/todo.txt",
            "copy": _FILE2,
            "remove": _FILE,
            "rmdir": "empty_folder",
            "grep": "notes/todo.txt",
        }.get(v, _FILE)
        values["path"] = path
        values["target"] = {"move": "reports", "copy": _DIR, "diff": "notes/todo.txt"}.get(v, _DIR)
        values["content"] = "written by validation"
        values["pattern"] = "review" if v == "grep" else "todo"
        values["count"] = 2
        values["mode"] = "l"
        values["flag"] = False
        args = {arg: values[role] for role, arg in by_role.items() if role in values}
        return args

    async def shell_checks(self, tool: ToolSpec, sem: FileSemantics) -> None:
        """Probes of a file verb's real semantics against the workspace (see filesem)."""
        self._reset_workspace()
        if sem.verb == "rmdir":
            (self.ws / "empty_folder").mkdir()
        args = self._probe_args(sem)
        before = read_workspace(self.ws)
        res = await self.call(tool.name, args)
        after = read_workspace(self.ws)
        problem: str | None = None
        category: IssueCategory = "runtime"
        data = res.data if isinstance(res.data, dict) else {}
        first = data.get(sem.response_fields[0]) if sem.response_fields else data.get("result")
        v = sem.verb
        if res.is_error:
            problem, category = f"valid call failed: {res.text}", error_category(res.text)
        elif missing := [f for f in sem.response_fields if f not in data]:
            problem = f"documented result field(s) {missing} missing"
        elif v in READ_VERBS | {"navigate"} and before != after:
            problem = "a read changed the workspace files"
        elif v == "read" and first != self.seed_files[_FILE]:
            problem = "returned content differs from the file"
        elif v == "grep" and first != [_LINE]:
            problem = f"matching lines {first!r}, expected [{_LINE!r}]"
        elif v == "list" and sorted(first or []) != (
            ["todo.txt"]
            if "path" in sem.roles.values()
            else sorted({k.split("/")[0] for k in before})
        ):
            problem = f"listed {first!r}, which is not the folder's entries"
        elif v == "navigate" and (first or "").rstrip("/").split("/")[-1] != _DIR:
            problem = f"current directory {first!r} after changing to {_DIR!r}"
        elif v == "write" and (self.ws / "new_note.txt").read_text(encoding="utf-8") != (
            "written by validation"
        ):
            problem = "the file does not hold the written content"
        elif v == "touch" and not (self.ws / "empty.txt").is_file():
            problem = "no file was created"
        elif v == "mkdir" and not (self.ws / "new_folder").is_dir():
            problem = "no folder was created"
        elif v == "move" and ("notes/todo.txt" in after or "reports/todo.txt" not in after):
            problem = "move did not move the file into the folder"
        elif v == "copy" and ("notes/q1.csv" not in after or _FILE2 not in after):
            problem = "copy did not copy the file into the folder"
        elif v == "remove" and _FILE in after:
            problem = "remove reported success but the file is still there"
        elif v == "rmdir" and (self.ws / "empty_folder").exists():
            problem = "rmdir reported success but the folder is still there"
        self.record(
            tool.name,
            f"semantics_{v}",
            "query" if v in {"where", "list", "read", "grep", "find", "navigate"} else "update",
            problem is None,
            category,
            problem or "",
            args,
        )
        path_arg = next((a for a, r in sem.roles.items() if r == "path"), None)
        if path_arg is not None and v not in {"write", "touch", "mkdir", "find"}:
            self._reset_workspace()
            await self.expect_error(
                tool,
                "boundary_missing_path",
                {**args, path_arg: "no_such_entry"},
                "mapping",
                "a missing file or folder",
            )
        if path_arg is not None:
            self._reset_workspace()
            await self.expect_error(
                tool,
                "boundary_path_escape",
                {**args, path_arg: "../../outside.txt"},
                "runtime",
                "a path outside the workspace",
            )
        self._reset_workspace()

    async def edit_checks(self, tool: ToolSpec, path_arg: str, pair: tuple[str, str, str]) -> None:
        """An edit replaces text in an existing file; a missing file or text is refused."""
        edits, old, new = pair
        target = self.ws / "weft_edit_probe.txt"
        target.write_text("alpha beta\ngamma\n", encoding="utf-8")
        args = {path_arg: "/weft_edit_probe.txt", edits: [{old: "beta", new: "delta"}]}
        res = await self.call(tool.name, args)
        got = target.read_text(encoding="utf-8")
        problem = (
            f"valid call failed: {res.text}"
            if res.is_error
            else None
            if got == "alpha delta\ngamma\n"
            else f"file after the edit: {got!r}"
        )
        self.record(tool.name, "edit_replaces_text", "normal", problem is None, "mapping",
                    problem or "", args)  # fmt: skip
        await self.expect_error(
            tool, "boundary_edit_missing_file",
            {path_arg: "/no_such_file.txt", edits: [{old: "a", new: "b"}]}, "mapping",
            "an edit of a missing file",
        )  # fmt: skip
        await self.expect_error(
            tool, "boundary_edit_missing_text",
            {path_arg: "/weft_edit_probe.txt", edits: [{old: "nowhere", new: "b"}]}, "mapping",
            "an edit of text that is not there",
        )  # fmt: skip
        target.unlink(missing_ok=True)

    async def file_checks(self, tool: ToolSpec, contract: ToolContract) -> None:
        sem = file_tool_set(self.spec, self.bindings).get(tool.name)
        if sem is not None:
            await self.shell_checks(tool, sem)
            return
        media = media_result(tool, contract.operation)
        if media is not None:
            await self.media_checks(tool, media)
            return
        style = text_result(tool, contract.operation)
        if style is not None and style.op in _TEXT_READS:
            await self.text_checks(tool, style)
            return
        pair = edit_pairs(tool)
        paths = [m.argument for m in contract.mappings if m.role == "path"]
        if pair is not None and contract.operation == "file_write" and paths:
            await self.edit_checks(tool, paths[0], pair)
            return
        args = self.build_args(tool, contract, None, {}, required_only=False) or {}
        before = read_workspace(self.ws)
        res = await self.call(tool.name, args)
        after = read_workspace(self.ws)
        op = contract.operation
        paths = [m.argument for m in contract.mappings if m.role == "path"]
        content_arg = next((m.argument for m in contract.mappings if m.role == "content"), None)
        if res.is_error:
            self.record(
                tool.name,
                "normal_all_fields",
                "normal",
                False,
                error_category(res.text),
                f"valid call failed: {res.text}",
                args,
            )
            return
        problem: str | None = None
        category: IssueCategory = "mapping"
        if op in {"file_read", "file_list"} and before != after:
            problem, category = "a read changed the workspace", "runtime"
        elif op == "file_read":
            rel = str(args.get(paths[0], "")).lstrip("/") if paths else ""
            want = (
                (self.ws / rel).read_text(encoding="utf-8")
                if rel and (self.ws / rel).is_file()
                else None
            )
            if (res.data or {}).get("content") != want:
                problem = "returned content differs from the file"
        elif op == "file_list":
            files = {k.rstrip("/") for k in after}
            got = {str(i.get("path", "")).lstrip("/") for i in (res.data or {}).get("items", [])}
            if got != files:
                problem = f"listed {sorted(got)[:4]}, workspace has {sorted(files)[:4]}"
        elif op == "file_write":
            if before == after:
                problem, category = (
                    "write reported success but the workspace is unchanged (state access)",
                    "runtime",
                )
            elif len(paths) > 1:
                src, dst = (
                    str(args.get(paths[0], "")).lstrip("/"),
                    str(args.get(paths[1], "")).lstrip("/"),
                )
                if src in after or dst not in after:
                    problem = "move did not move the file"
            else:
                rel = str(args.get(paths[0], "")).lstrip("/") if paths else ""
                if content_arg and content_arg in args:
                    p = self.ws / rel
                    if not p.is_file() or args[content_arg] not in p.read_text(encoding="utf-8"):
                        problem = "the file does not hold the written content"
                elif rel + "/" not in after and rel not in after:
                    problem = "nothing was created at the path"
        elif op == "file_delete":
            rel = str(args.get(paths[0], "")).lstrip("/") if paths else ""
            if rel in after:
                problem, category = "delete reported success but the file is still there", "runtime"
        self.record(
            tool.name,
            "normal_all_fields",
            "update" if op in {"file_write", "file_delete"} else "query",
            problem is None,
            category,
            problem or "",
            args,
        )
        if paths:
            bad = dict(args)
            bad[paths[0]] = "../../outside.txt"
            await self.expect_error(
                tool, "boundary_path_escape", bad, "runtime", "a path outside the workspace"
            )
            if op in {"file_read", "file_delete"}:
                await self.expect_error(
                    tool,
                    "boundary_missing_file",
                    {**args, paths[0]: "no/such/file.txt"},
                    "mapping",
                    "a missing file",
                )

    async def text_checks(self, tool: ToolSpec, style: TextResult) -> None:
        """A text answer shows what the workspace holds: a file's text, every entry of a listing
        or tree, a file's size, a searched file's path; a batch read reports a missing file
        inline and goes on."""
        self._reset_workspace()
        by_role = {r: a for a, r in style.roles.items()}
        args: dict[str, Any] = {}
        want: list[str] = []
        if style.op in {"read", "info"}:
            args[by_role.get("path", "path")] = _FILE
            p = self.ws / _FILE
            want = (
                [p.read_text(encoding="utf-8")] if style.op == "read" else [str(p.stat().st_size)]
            )
        elif style.op == "read_many":
            args[by_role["paths"]] = [_FILE, "no/such/file.txt"]
            want = [(self.ws / _FILE).read_text(encoding="utf-8"), "no/such/file.txt"]
        elif style.op in {"list", "tree"}:
            args[by_role.get("path", "path")] = "/"
            want = [p.name for p in self.ws.iterdir()]
            if style.op == "tree":
                want += [p.name for p in (self.ws / _DIR).iterdir()]
        elif style.op == "search":
            args[by_role.get("path", "path")] = "/"
            args[by_role["pattern"]] = "*" + Path(_FILE2).suffix
            want = [Path(_FILE2).name]
        before = read_workspace(self.ws)
        res = await self.call(tool.name, args)
        data = res.data if isinstance(res.data, dict) else {}
        text = str(data.get(style.field) or "")
        problem: str | None = None
        if res.is_error:
            problem = f"valid call failed: {res.text}"
        elif read_workspace(self.ws) != before:
            problem = "a read changed the workspace"
        elif not text:
            problem = f"no text under {style.field!r}"
        else:
            missing = [w for w in want if w not in text]
            if missing:
                problem = f"text does not show {missing[0][:40]!r}"
        self.record(
            tool.name, f"text_{style.op}", "query", problem is None, "mapping", problem or "", args
        )
        if "path" in by_role:
            await self.expect_error(
                tool,
                "boundary_path_escape",
                {**args, by_role["path"]: "../../outside.txt"},
                "runtime",
                "a path outside the workspace",
            )

    async def media_checks(self, tool: ToolSpec, media: MediaResult) -> None:
        """A content block decodes to the file's bytes; a missing file is refused."""
        import base64

        self._reset_workspace()
        args = {media.path: _FILE}
        res = await self.call(tool.name, args)
        blocks = (res.data or {}).get(media.field) if isinstance(res.data, dict) else None
        problem: str | None = f"valid call failed: {res.text}" if res.is_error else None
        if problem is None:
            first = blocks[0] if isinstance(blocks, list) and blocks else None
            block: dict[str, Any] = first if isinstance(first, dict) else {}
            nested = block.get("resource")
            inner: dict[str, Any] = nested if isinstance(nested, dict) else block
            encoded = str(inner.get("blob") or inner.get(media.data_field) or "")
            try:
                ok = base64.b64decode(encoded) == (self.ws / _FILE).read_bytes()
            except ValueError:
                ok = False
            problem = None if ok else "the block does not decode to the file's bytes"
        self.record(
            tool.name, "media_block", "query", problem is None, "mapping", problem or "", args
        )
        await self.expect_error(
            tool,
            "boundary_missing_file",
            {media.path: "no/such/file.txt"},
            "mapping",
            "a missing file",
        )
