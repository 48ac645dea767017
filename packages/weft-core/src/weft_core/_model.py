"""`WeftModel`, the strict pydantic base of every nested record, in a module that imports no
other part of weft-core: `weft_core.state` builds on it and `weft_core.models` (a trace keeps a
state diff per turn) on `weft_core.state`, so neither may need the other's package first."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class WeftModel(BaseModel):
    """Strict pydantic base for nested records: unknown fields are errors, not silently dropped."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
