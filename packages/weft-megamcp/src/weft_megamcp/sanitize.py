"""Scrub what an agent sees: no internal file paths, data-dir names or tokens in results or errors."""

from __future__ import annotations

import re
from typing import Any

# Absolute POSIX paths (at least two segments) and file:// URIs.
_PATH_RE = re.compile(r"(?:file://)?(?<![\w.])/(?:[\w.@+-]+/)+[\w.@+-]*")
_TRACE_RE = re.compile(r'File "[^"]*", line \d+')
MAX_ERROR_CHARS = 500


class Sanitizer:
    """Replaces secrets (explicit strings) and absolute paths with neutral markers such as `<path>`."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        self._secrets = sorted(
            {s for s in (secrets or []) if s and len(s) >= 4}, key=len, reverse=True
        )

    def add_secret(self, secret: str) -> None:
        if secret and len(secret) >= 4 and secret not in self._secrets:
            self._secrets.append(secret)
            self._secrets.sort(key=len, reverse=True)

    def secrets_only(self, text: str, *, workspace: str | None = None) -> str:
        """For successful results: only exact secrets and host paths are replaced, so ordinary
        data that happens to look like a path ('/api/v1') is left alone."""
        if workspace:
            text = text.replace(workspace.rstrip("/") + "/", "/").replace(
                workspace.rstrip("/"), "/"
            )
        for secret in self._secrets:
            text = text.replace(secret, "<hidden>")
        return text

    def leaks(self, text: str) -> bool:
        return any(secret in text for secret in self._secrets)

    def value(self, value: Any, *, workspace: str | None = None) -> Any:
        """`secrets_only` applied to every string inside a JSON-like value."""
        if isinstance(value, str):
            return self.secrets_only(value, workspace=workspace)
        if isinstance(value, list):
            return [self.value(v, workspace=workspace) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v, workspace=workspace) for k, v in value.items()}
        return value

    def text(self, text: str, *, workspace: str | None = None) -> str:
        if workspace:
            # A path inside the session's own workspace is shown relative to it, as the agent named it.
            text = text.replace(workspace.rstrip("/") + "/", "/").replace(
                workspace.rstrip("/"), "/"
            )
        for secret in self._secrets:
            text = text.replace(secret, "<hidden>")
        text = _TRACE_RE.sub("<frame>", text)
        text = _PATH_RE.sub("<path>", text)
        return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."
