"""Session groups served in one process: `GroupManager` and the hook types it calls.

One module per concern: `core` (state, lookup, quiescence), `tokens`, `idle`, `calls`,
`lifecycle`, `snapshots`, and `manager` (creation, adoption, verification).
"""

from weft_megamcp.groups.core import MutationHook
from weft_megamcp.groups.manager import GroupManager

__all__ = ["GroupManager", "MutationHook"]
