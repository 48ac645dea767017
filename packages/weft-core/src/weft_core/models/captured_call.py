"""One model call as a capture gateway saw it (the type lives beside `Trace`, which holds it)."""

from weft_core.models.trace import CapturedCall

__all__ = ["CapturedCall"]
