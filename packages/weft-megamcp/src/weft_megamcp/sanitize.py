"""Scrub what an agent sees: no internal file paths, data-dir names or tokens in results or errors."""

from __future__ import annotations

import re

# Absolute POSIX paths (at least two segments) and file:// URIs.
_PATH_RE = re.compile(r"(?:file://)?(?<![\w.])/(?:[\w.@+-]+/)+[\w.@+-]*")
_TRACE_RE = re.compile(r'File "[^"]*", line \d+')
MAX_ERROR_CHARS = 500


class Sanitizer:
    """Replaces secrets (explicit strings) and absolute paths with neutral placeholders."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        self._secrets = sorted(
            {s for s in (secrets or []) if s and len(s) >= 4}, key=len, reverse=True
        )

    def add_secret(self, secret: str) -> None:
        if secret and len(secret) >= 4 and secret not in self._secrets:
            self._secrets.append(secret)
            self._secrets.sort(key=len, reverse=True)

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
