"""OpenClaw (`openclaw@2026.9.6`, npm) in its native loop: `openclaw agent exec --config run.json
--json`, one isolated embedded turn per rollout on the Node 24 that `weft-tasks harness install
openclaw` puts next to it, with a fresh HOME and workspace.

`run.json` declares the capture gateway as an `openai-completions` provider and one MCP server
per endpoint of the session group (streamable HTTP, bearer header). Tool policy: exec defaults to
the `coding` profile with Tool Search, which hides MCP tools behind `tool_search`/`tool_call`
and offers shell and file tools; the `minimal` profile hides MCP tools entirely. `minimal` plus
`alsoAllow: ["bundle-mcp"]`, Tool Search and code mode off, gives the model the MCP tools
directly (`<server>__<tool>`) beside two session tools.

Exit codes (docs/cli/agent.md): 0 ok, 1 error, 2 timeout; the JSON envelope's `error.kind` and
message tell a model/network failure (infrastructure) from the agent's own stop.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from weft_core.models import CapturedCall
from weft_tasks.harness.external._process import (
    CapturedHarness,
    Outcome,
    ProcessResult,
    Verdict,
    tail,
    time_limit_verdict,
    upstream_failed,
)
from weft_tasks.harness.external.install import node_bin
from weft_tasks.harness.mcp_tools import server_alias
from weft_tasks.harness.protocol import HarnessTask, MCPEndpoint

PROVIDER = "weft"
MCP_UTILITY_TOOLS = ("resources_list", "resources_read", "prompts_list", "prompts_get")
_NETWORK = re.compile(
    r"network|connect|ECONN|ETIMEDOUT|socket|fetch failed|LLM request failed|status (5\d\d|429)",
    re.I,
)


class OpenClawHarness(CapturedHarness):
    name = "openclaw"

    def config(self, endpoints: dict[str, MCPEndpoint], base_url: str) -> dict[str, Any]:
        return {
            "models": {
                "providers": {
                    PROVIDER: {
                        "baseUrl": base_url,
                        "apiKey": "sk-weft-gateway",
                        "api": "openai-completions",
                        "models": [{"id": self.model, "name": self.model}],
                    }
                }
            },
            "agents": {"defaults": {"model": {"primary": f"{PROVIDER}/{self.model}"}}},
            "mcp": {
                "servers": {
                    server_alias(mcp): {
                        "url": ep.url,
                        "transport": "streamable-http",
                        "headers": {"Authorization": f"Bearer {ep.token}"},
                        "requestTimeoutMs": int(self.settings.mcp_timeout_s * 1000),
                        # MCP utility tools (resources/prompts) are not part of the task's tools
                        "toolFilter": {"exclude": list(MCP_UTILITY_TOOLS)},
                    }
                    for mcp, ep in sorted(endpoints.items())
                }
            },
            "tools": {
                "profile": "minimal",
                "alsoAllow": ["bundle-mcp"],
                "toolSearch": False,
                "codeMode": False,
            },
        }

    def prepare(
        self, scratch: Path, task: HarnessTask, endpoints: dict[str, MCPEndpoint], base_url: str
    ) -> tuple[list[str], dict[str, str]]:
        config = scratch / "run.json"
        config.write_text(json.dumps(self.config(endpoints, base_url), indent=2), "utf-8")
        brief = scratch / "task.md"
        brief.write_text(task.first_request, encoding="utf-8")
        workspace = scratch / "workspace"
        workspace.mkdir()
        # OpenClaw's own limit ends the run cleanly (exit 2) before Weft's kills it.
        limit = max(30, int(self.settings.timeout_s) - 30)
        argv = [
            str(self.executable()),
            "agent",
            "exec",
            "--config",
            str(config),
            "--model",
            f"{PROVIDER}/{self.model}",
            "--json",
            "--message-file",
            str(brief),
            "--cwd",
            str(workspace),
            "--timeout",
            str(limit),
        ]
        env = {
            "PATH": f"{node_bin(self.settings.home)}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(scratch),
            "LANG": "C.UTF-8",
            "TMPDIR": str(scratch),
            "NO_COLOR": "1",
        }
        return argv, env

    def judge(self, result: ProcessResult, scratch: Path, calls: list[CapturedCall]) -> Verdict:
        return openclaw_verdict(result, envelope_of(result.stdout), calls)


def envelope_of(stdout: str) -> dict[str, Any] | None:
    """The `--json` envelope (stdout is reserved for it; tolerate a log line before it)."""
    start = stdout.find("{")
    while start != -1:
        try:
            data = json.loads(stdout[start:])
        except ValueError:
            start = stdout.find("\n{", start + 1)
            start = start + 1 if start != -1 else -1
            continue
        return data if isinstance(data, dict) else None
    return None


def openclaw_verdict(
    result: ProcessResult, envelope: dict[str, Any] | None, calls: list[CapturedCall]
) -> Verdict:
    """Weft's outcome kind for one `agent exec` run (exit code, envelope, captured calls)."""
    if result.timed_out:
        return time_limit_verdict(result, calls)
    if envelope is None:
        return Verdict(
            Outcome.INFRASTRUCTURE,
            f"exit {result.code} without a JSON envelope: {tail(result.stderr or result.stdout)}",
        )
    status = envelope.get("status")
    error = envelope.get("error") if isinstance(envelope.get("error"), dict) else {}
    message = str((error or {}).get("message") or "")
    kind = str((error or {}).get("kind") or "")
    if result.code == 0 and status == "ok":
        return Verdict(Outcome.OK)
    upstream = upstream_failed(calls)
    if upstream or _NETWORK.search(message) or kind in ("fallback_exhausted", "aborted"):
        return Verdict(
            Outcome.INFRASTRUCTURE, f"exit {result.code} {kind}: {upstream or message}"[:500]
        )
    if status == "timeout" or result.code == 2:
        return Verdict(Outcome.STOPPED, f"time limit reached: {message}"[:500])
    if envelope.get("model") is None and kind == "exception":
        # failed before a model was selected: the config or install is wrong
        return Verdict(Outcome.CONFIG, f"exit {result.code}: {message}"[:500])
    return Verdict(Outcome.STOPPED, f"agent error ({kind}): {message}"[:500])
