"""weft-megamcp: a shared MCP host with isolated, recoverable per-session state (paper §3.3.3)."""

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import (
    CallResult,
    GroupHandle,
    GroupInfo,
    GroupStatus,
    SessionInfo,
    VerificationResult,
)
from weft_megamcp.registry import MCPRecord
from weft_megamcp.settings import MegaMCPSettings, load_settings

__all__ = [
    "CallResult",
    "GroupHandle",
    "GroupInfo",
    "GroupStatus",
    "MCPRecord",
    "MegaMCPClient",
    "MegaMCPHost",
    "MegaMCPSettings",
    "SessionInfo",
    "VerificationResult",
    "load_settings",
]
