"""Registration probe: screen and import a module in a throwaway (sandboxed) process.

`python -m weft_megamcp._probe FOLDER ENTRY MCP_ID VERSION TAG` screens the module's sources,
imports it as the loader would, lists its tools and prints one line `RESULT_MARK{json}` with
`screen` and `tools` (or `error`). Module code therefore never runs inside the host at
registration: a module that exits, hangs or crashes at import ends only this process, and the
host reports that as a one-line registration error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from weft_megamcp.sandbox import Sandbox

RESULT_MARK = "WEFT-PROBE "


def tool_specs(tools: list[Any]) -> list[dict[str, Any]]:
    """Tools (fastmcp or MCP wire form) as weft-core ToolSpec dicts, as the registry stores them."""
    from weft_core.models import ToolSpec

    out = []
    for tool in tools:
        mcp_tool = tool.to_mcp_tool() if hasattr(tool, "to_mcp_tool") else tool
        schema = dict(mcp_tool.input_schema or {"type": "object", "properties": {}})
        schema.setdefault("type", "object")
        spec = ToolSpec(
            name=mcp_tool.name,
            description=mcp_tool.description or "",
            input_schema=schema,
            output_schema=mcp_tool.output_schema,
            annotations=mcp_tool.annotations.model_dump(exclude_none=True)
            if mcp_tool.annotations
            else None,
        )
        out.append(spec.model_dump(mode="json"))
    return out


def _probe(folder: Path, entry: str, mcp_id: str, version: int, tag: str) -> dict[str, Any]:
    from weft_megamcp.exceptions import ModuleLoadError
    from weft_megamcp.loader import load_server
    from weft_megamcp.screening import ScreenError, screen_path

    try:
        report = screen_path(folder)
    except ScreenError as exc:
        return {"error": str(exc)}
    screen = {
        "tier": str(report.tier),
        "load_class": str(report.load_class),
        "cap": report.cap,
        "reasons": report.reasons[:20],
    }
    try:
        server, _ = load_server(mcp_id, version, folder, entry, tag)
        tools = asyncio.run(server.list_tools())
    except ModuleLoadError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # third-party code
        return {"error": f"listing tools failed: {type(exc).__name__}: {exc}"}
    return {"screen": screen, "tools": tool_specs(list(tools))}


def probe_timeout(what: str, entry: str, timeout_s: float) -> Exception:
    """The one-line RegistrationError of a probe stopped at register_timeout_s."""
    from weft_megamcp.exceptions import RegistrationError

    return RegistrationError(
        f"{what}: importing {entry!r} and listing its tools took over {timeout_s:g} s "
        "(register_timeout_s)"
    )


async def run_probe(
    folder: Path,
    entry: str,
    mcp_id: str,
    version: int,
    tag: str,
    *,
    sandbox: Sandbox,
    timeout_s: float,
) -> dict[str, Any]:
    """Host side: run the probe on a materialized source folder; {"screen", "tools"} or
    RegistrationError with one line saying what the module did."""
    from weft_megamcp.exceptions import RegistrationError
    from weft_megamcp.sandbox import SANDBOX_MODULE

    what = f"MCP {mcp_id!r} v{version}"
    src = str(SANDBOX_MODULE if sandbox.mode == "bwrap" else folder)
    argv = [sys.executable, "-m", "weft_megamcp._probe", src, entry, mcp_id, str(version), tag]
    with tempfile.TemporaryDirectory(prefix="megamcp-probe-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        spec = sandbox.wrap(argv, env={}, workspace=ws, db=None, module_src=folder)
        proc = await asyncio.create_subprocess_exec(
            *spec.argv,
            env=spec.env,
            cwd=spec.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(timeout_s):
                out, err = await proc.communicate()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            raise probe_timeout(what, entry, timeout_s) from None
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            raise
    for line in reversed(out.decode("utf-8", "replace").splitlines()):
        if line.startswith(RESULT_MARK):
            result: dict[str, Any] = json.loads(line[len(RESULT_MARK) :])
            if "error" in result:
                msg = str(result["error"])
                msg = msg if msg.startswith("MCP ") else f"{what}: {msg}"
                raise RegistrationError(msg.splitlines()[0] if msg.strip() else what)
            return result
    tail = err.decode("utf-8", "replace").strip().splitlines()
    last = f": {tail[-1][:300]}" if tail else ""
    raise RegistrationError(
        f"{what}: importing {entry!r} ended the probe process (exit {proc.returncode}) "
        f"before it listed tools{last}"
    )


def main(argv: list[str]) -> int:
    folder, entry, mcp_id, version, tag = argv
    # Whatever the module prints goes to stderr; only the result line reaches stdout.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    result = _probe(Path(folder), entry, mcp_id, int(version), tag)
    with os.fdopen(result_fd, "w", encoding="utf-8") as out:
        out.write(RESULT_MARK + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
