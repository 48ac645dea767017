"""Hermes Agent (`hermes-agent[mcp]==0.19.0`, PyPI) in its native loop.

One `hermes -z` process per rollout, in its own venv (its pins clash with Weft's mcp 2.x) and a
fresh `HERMES_HOME` (Hermes writes skills and memory that would leak across tasks). The config
gives it one MCP server per endpoint of the session group (streamable HTTP, bearer header), the
capture gateway as its `custom` OpenAI-compatible provider, and `-t` restricts its tools to those
servers (no terminal, files or memory). `--ignore-rules` skips AGENTS.md/SOUL.md/memory injection.

Hermes exits 0 even when it could not reach the model ("API call failed after 3 retries"); only
its usage file says `"failed": true` — so the usage file, not the exit code, decides.
"""

from __future__ import annotations

import json
import os
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
from weft_tasks.harness.mcp_tools import server_alias
from weft_tasks.harness.protocol import HarnessTask, MCPEndpoint

USAGE_FILE = "usage.json"


class HermesHarness(CapturedHarness):
    name = "hermes"

    def config(self, endpoints: dict[str, MCPEndpoint], base_url: str) -> dict[str, Any]:
        servers = {
            server_alias(mcp): {
                "url": ep.url,
                "headers": {"Authorization": f"Bearer {ep.token}"},
                "timeout": self.settings.mcp_timeout_s,
                "connect_timeout": 10,
                # MCP utility tools (resources/prompts) are not part of the task's tool space
                "tools": {"resources": False, "prompts": False},
            }
            for mcp, ep in sorted(endpoints.items())
        }
        return {
            "model": {
                "provider": "custom",
                "base_url": base_url,
                "default": self.model,
                "api_key": "sk-weft-gateway",
            },
            "mcp_servers": servers,
            "agent": {"max_turns": self.settings.max_turns},
        }

    def prepare(
        self, scratch: Path, task: HarnessTask, endpoints: dict[str, MCPEndpoint], base_url: str
    ) -> tuple[list[str], dict[str, str]]:
        home = scratch / "hermes-home"
        home.mkdir()
        config = self.config(endpoints, base_url)
        # JSON is YAML: no YAML writer needed for config.yaml.
        (home / "config.yaml").write_text(json.dumps(config, indent=2), encoding="utf-8")
        argv = [
            str(self.executable()),
            "-z",
            task.first_request,
            "-t",
            ",".join(config["mcp_servers"]),
            "--ignore-rules",
            "--usage-file",
            str(scratch / USAGE_FILE),
        ]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(scratch),
            "HERMES_HOME": str(home),
            "LANG": "C.UTF-8",
            "TMPDIR": str(scratch),
        }
        return argv, env

    def judge(self, result: ProcessResult, scratch: Path, calls: list[CapturedCall]) -> Verdict:
        return hermes_verdict(result, _usage(scratch / USAGE_FILE), calls)


def _usage(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def hermes_verdict(
    result: ProcessResult, usage: dict[str, Any] | None, calls: list[CapturedCall]
) -> Verdict:
    """Weft's outcome kind for one `hermes -z` run (exit code, usage file, captured calls)."""
    if result.timed_out:
        return time_limit_verdict(result, calls)
    if usage is None:
        return Verdict(
            Outcome.INFRASTRUCTURE,
            f"exit {result.code} without a usage file: {tail(result.stderr or result.stdout)}",
        )
    if usage.get("failed"):
        why = usage.get("failure") or upstream_failed(calls) or tail(result.stdout)
        return Verdict(Outcome.INFRASTRUCTURE, f"reported failed (exit {result.code}): {why}")
    if result.code == 2:
        return Verdict(Outcome.CONFIG, f"rejected its arguments: {tail(result.stderr)}")
    if not usage.get("completed"):
        return Verdict(Outcome.STOPPED, "turn budget (agent.max_turns) exhausted")
    if result.code != 0:
        return Verdict(Outcome.STOPPED, f"no final response (exit {result.code})")
    return Verdict(Outcome.OK)
