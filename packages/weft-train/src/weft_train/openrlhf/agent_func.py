"""The file to pass as `--train.agent_func_path` (OpenRLHF loads `AgentExecutor` from it)."""

from weft_train.openrlhf.executor import AtomicTurnExecutor as AgentExecutor

__all__ = ["AgentExecutor"]
