"""Adapter for external harnesses that run as their own process (OpenClaw, Hermes, any agent CLI).

The process keeps its own prompts, memory, planning loop, tool-call protocol and error recovery;
Weft only gives it the session group's MegaMCP endpoints and exchanges JSON lines with it:

- environment: `WEFT_MCP_ENDPOINTS` = `{"<mcp>": {"url": ..., "token": ...}}` (streamable HTTP,
  `Authorization: Bearer <token>`), `WEFT_VIEW_MODE` (agentic|simuser), `WEFT_ROLLOUT_ID`, and
  with a capture gateway `WEFT_MODEL_BASE_URL` (an OpenAI-compatible base URL for this rollout:
  a harness that sends its model calls there gets them recorded in the trace);
- stdin, from Weft: `{"type": "user", "content": "..."}` to start each turn, `{"type": "stop"}`
  when the episode is over;
- stdout, from the harness: `{"type": "message", "message": <OpenAI chat message>}` for every
  message of its transcript (assistant tool calls, tool results, replies), `{"type": "turn_end"}`
  when it ends a turn, optionally `{"type": "tools", "tools": [...]}` and
  `{"type": "model", "name": "..."}`. Lines that are not JSON objects are ignored (logs).

An OpenClaw or Hermes adapter is a small wrapper script that starts the harness with the endpoints
configured as its MCP servers and prints its transcript in this form; a Python harness can instead
implement `weft_tasks.harness.Harness` directly.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from weft_core.models import ChatMessage, ViewMode
from weft_tasks.gateway import CaptureGateway
from weft_tasks.harness._errors import HarnessConfigError, HarnessRuntimeError
from weft_tasks.harness.protocol import HarnessRun, HarnessTask, MCPEndpoint, TurnCallback


class SubprocessHarness:
    """Runs `command` once per rollout and speaks the JSON-lines protocol above."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        *,
        modes: frozenset[ViewMode] = frozenset({ViewMode.AGENTIC}),
        env: dict[str, str] | None = None,
        turn_timeout_s: float = 600.0,
        model: str | None = None,
        gateway: CaptureGateway | None = None,
    ) -> None:
        if not command:
            raise HarnessConfigError(f"harness {name!r}: empty command")
        self.name = name
        self.command = list(command)
        self.modes = modes
        self.env = env or {}
        self.turn_timeout_s = turn_timeout_s
        self._model = model or name
        self.gateway = gateway

    @property
    def model_name(self) -> str:
        return self._model

    async def run(
        self, task: HarnessTask, endpoints: dict[str, MCPEndpoint], on_turn: TurnCallback
    ) -> HarnessRun:
        env = {
            **os.environ,
            **self.env,
            "WEFT_MCP_ENDPOINTS": json.dumps(
                {m: {"url": e.url, "token": e.token} for m, e in endpoints.items()}
            ),
            "WEFT_VIEW_MODE": task.mode.value,
            "WEFT_ROLLOUT_ID": task.rollout_id,
        }
        if self.gateway is not None:
            env["WEFT_MODEL_BASE_URL"] = self.gateway.base_url(task.rollout_id or self.name)
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
        except OSError as exc:
            raise HarnessConfigError(
                f"harness {self.name!r}: cannot start {self.command[0]!r}: {exc.strerror}"
            ) from None
        assert proc.stdin and proc.stdout
        messages: list[ChatMessage] = []
        tools: list[dict[str, Any]] = []
        model = self._model
        turns = 0
        request: str | None = task.first_request
        try:
            while request is not None:
                messages.append(ChatMessage(role="user", content=request))
                await self._send(proc, {"type": "user", "content": request})
                while True:
                    line = await asyncio.wait_for(proc.stdout.readline(), self.turn_timeout_s)
                    if not line:
                        err = (
                            (await proc.stderr.read()).decode(errors="replace")[-500:]
                            if proc.stderr
                            else ""
                        )
                        raise HarnessRuntimeError(
                            f"harness {self.name!r} exited mid-turn (code {await proc.wait()}): {err.strip()}"
                        )
                    event = _event(line)
                    if event is None:
                        continue
                    kind = event.get("type")
                    if kind == "message":
                        try:
                            messages.append(ChatMessage.model_validate(event.get("message")))
                        except ValidationError as exc:
                            raise HarnessRuntimeError(
                                f"harness {self.name!r} sent a message that is not an OpenAI chat message: "
                                f"{exc.errors()[0]['msg']}"
                            ) from None
                    elif kind == "tools" and isinstance(event.get("tools"), list):
                        tools = event["tools"]
                    elif kind == "model" and isinstance(event.get("name"), str):
                        model = event["name"]
                    elif kind == "turn_end":
                        break
                turns += 1
                request = await on_turn(list(messages))
            await self._send(proc, {"type": "stop"})
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            raise HarnessRuntimeError(
                f"harness {self.name!r} did not finish a turn in {self.turn_timeout_s}s"
            ) from None
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        return HarnessRun(messages=messages, tools=tools, model=model, turns=turns)

    @staticmethod
    async def _send(proc: asyncio.subprocess.Process, event: dict[str, Any]) -> None:
        assert proc.stdin
        try:
            proc.stdin.write((json.dumps(event) + "\n").encode())
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the process ended; its exit is reported by the read loop


def _event(line: bytes) -> dict[str, Any] | None:
    text = line.decode(errors="replace").strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None
