"""The OpenRLHF 0.11.2 adapter (extra `weft-train[openrlhf]`). `bundle` is plain Python and
imports no openrlhf; the executor and trainer overrides import openrlhf and only run inside it."""

from weft_train.openrlhf.bundle import ATOMIC_GROUPS, bundle, candidate, credit_flags, unbundle

__all__ = ["ATOMIC_GROUPS", "bundle", "candidate", "credit_flags", "unbundle"]
