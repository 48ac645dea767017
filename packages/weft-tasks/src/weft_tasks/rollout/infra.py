"""Which failures are infrastructure (retried physically, never the policy's fault)."""

from __future__ import annotations

from weft_core.exceptions import UserError, WeftRuntimeError
from weft_core.models import LedgerEntry

_INFRA_NAMES = (
    "ConnectError",
    "ConnectTimeout",
    "ReadTimeout",
    "RemoteProtocolError",
    "TransportError",
    "APIConnectionError",
    "APITimeoutError",
    "RateLimitError",
    "InternalServerError",
    "ClosedResourceError",
    "BrokenResourceError",
    "EndOfStream",
)


def is_infrastructure_error(exc: BaseException, _depth: int = 0) -> bool:
    """Transport failures, timeouts, a crashed worker or host: anything the policy did not cause.
    Input errors (UserError) are never retried."""
    if _depth > 8:
        return False
    if isinstance(exc, BaseExceptionGroup):
        return any(is_infrastructure_error(e, _depth + 1) for e in exc.exceptions)
    if isinstance(exc, UserError):
        return False
    if isinstance(exc, OSError | TimeoutError | ConnectionError | WeftRuntimeError):
        return True
    names = {c.__name__ for c in type(exc).__mro__}
    if names & set(_INFRA_NAMES):
        return True
    cause = exc.__cause__ or exc.__context__
    return cause is not None and is_infrastructure_error(cause, _depth + 1)


def infrastructure_entries(ledger: list[LedgerEntry]) -> list[LedgerEntry]:
    return [e for e in ledger if e.error_kind is not None and e.error_kind.is_infrastructure]
