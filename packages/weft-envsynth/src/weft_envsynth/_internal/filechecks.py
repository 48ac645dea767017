"""Validation of workspace (file) tools: calls checked against the workspace diff and file contents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from weft_core.models import ToolContract, ToolSpec
from weft_envsynth._internal.dbstate import read_workspace
from weft_envsynth.plans import IssueCategory


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


class WorkspaceChecks:
    """Mixin of the validator: needs `ws`, `call`, `record`, `build_args`, `expect_error`."""

    ws: Path
    call: Any
    record: Any
    build_args: Any
    expect_error: Any

    async def file_checks(self, tool: ToolSpec, contract: ToolContract) -> None:
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
