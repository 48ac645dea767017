"""weft-core: Weft's artifact formats, spec loaders, check language, state diff and LLM configuration."""

from weft_core.exceptions import UserError, WeftError, WeftRuntimeError

__version__ = "0.1.0"

__all__ = ["UserError", "WeftError", "WeftRuntimeError", "__version__"]
