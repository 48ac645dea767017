"""The capture gateway: an OpenAI-compatible proxy in front of any chat endpoint (vLLM,
`weft-train serve`, a hosted API) that records every model call of every rollout.

A harness is pointed at `http://<gateway>/r/<rollout_id>/v1` as its model base URL (both Hermes
and OpenClaw accept any path), so the rollout id travels in the URL, not in a key. For each
`POST /r/<rollout_id>/v1/chat/completions` the gateway

- forces `return_token_ids: true` and `logprobs: true` (`top_logprobs: 0`) unless the upstream
  refused them once (a 400 naming the field: the call is retried without, and the gateway stops
  sending it);
- relays the answer unchanged — a JSON body, or the SSE stream byte for byte while parsing it on
  the side (both harnesses stream);
- records a `CapturedCall`: the request, prompt and completion ids, logprobs, the parsed
  message, finish reason, usage and latency.

`GET /r/<rollout_id>/v1/models` passes through. Records stay in memory until `take()`; with
`capture_dir` each is also appended to `<capture_dir>/<rollout_id>.jsonl` with the full request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from weft_core.models import CapturedCall
from weft_tasks._serve import serving
from weft_tasks.gateway.reply import Reply, SSEParser

# Fields forced into every request, with the value they get, while the upstream accepts them.
FORCED_FIELDS: dict[str, Any] = {"return_token_ids": True, "logprobs": True, "top_logprobs": 0}
_HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "content-encoding"}


class CaptureGateway:
    """The proxy and its records. Serve `app` with any ASGI server, or use `running()`."""

    def __init__(
        self,
        upstream: str,
        *,
        api_key: str | None = None,
        capture_dir: Path | None = None,
        timeout_s: float = 600.0,
        force: bool = True,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.api_key = api_key
        self.capture_dir = capture_dir
        self.timeout_s = timeout_s
        self.force = force
        self.unsupported: set[str] = set()
        self._records: dict[str, dict[int, CapturedCall]] = defaultdict(dict)
        self._next: dict[str, int] = defaultdict(int)
        self._pending: dict[str, set[int]] = defaultdict(set)
        self._last_request: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._client: httpx.AsyncClient | None = None
        self.url: str | None = None
        self.app = Starlette(
            routes=[
                Route("/r/{rollout_id}/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/r/{rollout_id}/v1/models", self._models, methods=["GET"]),
            ]
        )

    # ------------------------------------------------------------------ records

    def base_url(self, rollout_id: str) -> str:
        """The model base URL to give the harness of `rollout_id`."""
        if self.url is None:
            raise RuntimeError("the gateway is not running; use `async with gateway.running()`")
        return f"{self.url}/r/{rollout_id}/v1"

    def records(self, rollout_id: str) -> list[CapturedCall]:
        """The rollout's finished calls, in the order they arrived."""
        with self._lock:
            return [c for _, c in sorted(self._records.get(rollout_id, {}).items())]

    def last_request(self, rollout_id: str) -> dict[str, Any] | None:
        """The full body (messages, tools) of the rollout's latest call."""
        with self._lock:
            return self._last_request.get(rollout_id)

    async def settle(self, rollout_id: str, timeout_s: float = 5.0) -> None:
        """Wait until calls still streaming for `rollout_id` are recorded (or `timeout_s`)."""
        deadline = time.monotonic() + timeout_s
        while self._pending.get(rollout_id) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    def take(self, rollout_id: str) -> list[CapturedCall]:
        """The rollout's records, removed from memory (a retried rollout starts clean)."""
        calls = self.records(rollout_id)
        self.discard(rollout_id)
        return calls

    def discard(self, rollout_id: str) -> None:
        with self._lock:
            for table in (self._records, self._next, self._pending, self._last_request):
                table.pop(rollout_id, None)

    def _reserve(self, rollout_id: str, request: dict[str, Any]) -> int:
        with self._lock:
            index = self._next[rollout_id]
            self._next[rollout_id] = index + 1
            self._pending[rollout_id].add(index)
            self._last_request[rollout_id] = request
            return index

    def _record(
        self, rollout_id: str, index: int, call: CapturedCall, request: dict[str, Any]
    ) -> None:
        with self._lock:
            call = call.model_copy(update={"index": index})
            self._records[rollout_id][index] = call
            self._pending[rollout_id].discard(index)
        if self.capture_dir is not None:
            self.capture_dir.mkdir(parents=True, exist_ok=True)
            line = json.dumps({**call.model_dump(mode="json"), "request": request})
            with (self.capture_dir / f"{rollout_id}.jsonl").open("a", encoding="utf-8") as f:
                f.write(line + "\n")

    # ------------------------------------------------------------------ serving

    @contextlib.asynccontextmanager
    async def running(self, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
        """Serve on `host:port` (0 = a free port) in this event loop; yields the root URL."""
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s, connect=10.0))
        try:
            async with serving(self.app, host, port) as url:
                self.url = url
                yield url
        finally:
            await self._client.aclose()
            self._client = None
            self.url = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:  # served by an outside ASGI server
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s, connect=10.0))
        return self._client

    def _headers(self, request: Request) -> dict[str, str]:
        # identity: the stream is relayed byte for byte and parsed on the side
        headers = {"content-type": "application/json", "accept-encoding": "identity"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        elif "authorization" in request.headers:
            headers["authorization"] = request.headers["authorization"]
        return headers

    async def _models(self, request: Request) -> Response:
        try:
            upstream = await self._http().get(
                f"{self.upstream}/models", headers=self._headers(request)
            )
        except httpx.HTTPError as exc:
            return _error(502, f"upstream unreachable: {type(exc).__name__}")
        return Response(
            upstream.content,
            status_code=upstream.status_code,
            media_type=upstream.headers.get("content-type", "application/json"),
        )

    def _forced(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        if not self.force:
            return body, []
        out = dict(body)
        forced = []
        for name, value in FORCED_FIELDS.items():
            if name in self.unsupported or out.get(name) == value:
                continue
            if name == "top_logprobs" and out.get("top_logprobs"):
                continue  # the harness asked for alternatives itself
            out[name] = value
            forced.append(name)
        return out, forced

    def _refused(self, status: int, text: str, forced: list[str]) -> list[str]:
        """The forced fields an error answer names (the upstream does not support them)."""
        if status not in (400, 422) or not forced:
            return []
        named = [f for f in forced if f in text]
        if "logprobs" in named and "top_logprobs" in forced:
            named.append("top_logprobs")
        return sorted(set(named))

    async def _chat(self, request: Request) -> Response:
        rollout_id = request.path_params["rollout_id"]
        started = time.perf_counter()
        try:
            original = json.loads(await request.body())
            if not isinstance(original, dict):
                raise ValueError("not an object")
        except ValueError:
            return _error(400, "the request body is not a JSON object")
        stream = bool(original.get("stream"))
        index = self._reserve(rollout_id, original)
        headers = self._headers(request)
        url = f"{self.upstream}/chat/completions"
        client = self._http()
        for _attempt in range(len(FORCED_FIELDS) + 1):
            body, forced = self._forced(original)
            try:
                upstream = await client.send(
                    client.build_request("POST", url, json=body, headers=headers), stream=True
                )
            except httpx.HTTPError as exc:
                message = f"upstream unreachable: {type(exc).__name__}: {exc}"
                self._record(
                    rollout_id,
                    index,
                    _call(original, forced, stream, 502, Reply(error=message), started),
                    original,
                )
                return _error(502, message)
            if upstream.status_code < 400:
                break
            text = (await upstream.aread()).decode(errors="replace")
            await upstream.aclose()
            refused = self._refused(upstream.status_code, text, forced)
            if refused:
                self.unsupported.update(refused)
                continue
            reply = Reply(error=f"upstream {upstream.status_code}: {text[:500]}")
            self._record(
                rollout_id,
                index,
                _call(original, forced, stream, upstream.status_code, reply, started),
                original,
            )
            return Response(
                text,
                status_code=upstream.status_code,
                media_type=upstream.headers.get("content-type", "application/json"),
            )
        passed = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_HEADERS}
        if not upstream.headers.get("content-type", "").startswith("text/event-stream"):
            raw = await upstream.aread()
            await upstream.aclose()
            reply = Reply()
            try:
                reply.feed_body(json.loads(raw))
            except (ValueError, AttributeError):
                reply.error = "upstream answered a body that is not JSON"
            self._record(
                rollout_id,
                index,
                _call(original, forced, stream, upstream.status_code, reply, started),
                original,
            )
            return Response(raw, status_code=upstream.status_code, headers=passed)

        reply = Reply()
        parser = SSEParser(reply)

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for data in upstream.aiter_raw():
                    parser.feed(data)
                    yield data
            except httpx.HTTPError as exc:
                reply.error = f"upstream stream broke: {type(exc).__name__}"
                raise
            finally:
                # Recorded here, not in a background task, so a record never lags the next call.
                parser.close()
                await upstream.aclose()
                self._record(
                    rollout_id,
                    index,
                    _call(original, forced, stream, upstream.status_code, reply, started),
                    original,
                )

        return StreamingResponse(relay(), status_code=upstream.status_code, headers=passed)


def _call(
    request: dict[str, Any],
    forced: list[str],
    stream: bool,
    status: int,
    reply: Reply,
    started: float,
) -> CapturedCall:
    messages = request.get("messages")
    return CapturedCall(
        index=0,
        request={k: v for k, v in request.items() if k not in ("messages", "tools")},
        prompt_messages=len(messages) if isinstance(messages, list) else 0,
        forced=forced,
        stream=stream,
        status=status,
        prompt_token_ids=reply.prompt_token_ids,
        completion_token_ids=reply.completion_ids,
        completion_logprobs=reply.logprobs,
        message=reply.message(),
        finish_reason=reply.finish_reason,
        usage=reply.usage,
        latency_s=time.perf_counter() - started,
        error=reply.error,
    )


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": "weft_gateway_error", "code": status}},
        status_code=status,
    )
