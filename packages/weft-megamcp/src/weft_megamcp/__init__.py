"""weft-megamcp: a shared MCP host with isolated, recoverable per-session state (paper §3.3.3).

Names are imported lazily so that light entry points (the verifier runner, `inspect`) do not pay
for the whole serving stack.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "MegaMCPClient": "weft_megamcp.client",
    "MegaMCPHost": "weft_megamcp.host",
    "BatchResult": "weft_megamcp.models",
    "CallOp": "weft_megamcp.models",
    "CallResult": "weft_megamcp.models",
    "FreezeOp": "weft_megamcp.models",
    "SetOp": "weft_megamcp.models",
    "VerifyOp": "weft_megamcp.models",
    "GroupHandle": "weft_megamcp.models",
    "GroupInfo": "weft_megamcp.models",
    "GroupStatus": "weft_megamcp.models",
    "SessionInfo": "weft_megamcp.models",
    "VerificationResult": "weft_megamcp.models",
    "MCPRecord": "weft_megamcp.registry",
    "MegaMCPSettings": "weft_megamcp.settings",
    "GroupService": "weft_megamcp.service",
    "GroupRef": "weft_megamcp.service",
    "load_settings": "weft_megamcp.settings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'weft_megamcp' has no attribute {name!r}")
