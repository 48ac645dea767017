"""The token table of one process: which session a bearer token opens.

Tokens are stored only as sha256; the plaintext leaves the process once, in the handle that
`issue` returns it for. A closed group's hashes stay revoked so a stale token gets a clear 401
instead of being mistaken for a group that moved to another worker.
"""

from __future__ import annotations

import secrets
import time

from weft_megamcp._session import HostedSession, token_sha
from weft_megamcp.exceptions import AuthError


class TokenTable:
    """sha256(token) -> the session it opens here, and the hashes of closed groups."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._by_token: dict[str, HostedSession] = {}
        self._revoked: set[str] = set()

    def issue(self, session: HostedSession) -> str:
        """A new token for `session` (replacing its hash and expiry); the only plaintext copy."""
        token = secrets.token_urlsafe(32)
        session.token_sha = token_sha(token)
        session.expires_at = time.time() + self.ttl_s
        self._by_token[session.token_sha] = session
        return token

    def serve(self, session: HostedSession) -> None:
        """Accept the token `session` already has (a group adopted from disk)."""
        self._by_token[session.token_sha] = session

    def withdraw(self, session: HostedSession) -> None:
        """Stop accepting `session`'s token here without revoking it (its group moved away)."""
        self._by_token.pop(session.token_sha, None)

    def revoke(self, session: HostedSession) -> None:
        """Refuse `session`'s token from now on (its group was closed)."""
        self._by_token.pop(session.token_sha, None)
        self._revoked.add(session.token_sha)

    def authenticate(self, token: str | None) -> HostedSession:
        """The session a bearer token opens, or AuthError (missing, unknown, revoked, expired)."""
        if not token:
            raise AuthError("missing bearer token")
        sha = token_sha(token)
        session = self._by_token.get(sha)
        if session is None:
            if sha in self._revoked:
                raise AuthError("token revoked: its group was closed")
            raise AuthError("unknown token")
        if time.time() > session.expires_at:
            raise AuthError("token expired")
        return session

    def moved_away(self, token: str) -> bool:
        """True for a token this process does not serve and never revoked: its group lives on
        another worker now (or never existed; the master answers that with a 401)."""
        sha = token_sha(token)
        return sha not in self._by_token and sha not in self._revoked
