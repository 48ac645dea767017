"""The OpenRLHF 0.11.2 adapter (extra `weft-train[openrlhf]`). `bundle` and `launch` are plain
Python and import no openrlhf; `executor`, `agent_func`, `trainer` and `train` import openrlhf and
only run inside it (this package is the only place in Weft that imports it)."""

from weft_train.openrlhf.bundle import (
    ATOMIC_GROUPS,
    bundle,
    candidate,
    credit_flags,
    screen,
    unbundle,
)

__all__ = ["ATOMIC_GROUPS", "bundle", "candidate", "credit_flags", "screen", "unbundle"]
