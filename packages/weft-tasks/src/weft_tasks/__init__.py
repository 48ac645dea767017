"""weft-tasks: certified atomic-task libraries, cross-MCP composition with grounded state, task
views, harnesses and rollouts. Import from the subpackages: `weft_tasks.atomic`,
`weft_tasks.compose`, `weft_tasks.grounding`, `weft_tasks.views`, `weft_tasks.harness`,
`weft_tasks.rollout`."""

from weft_tasks.exceptions import TasksError, TasksRuntimeError, TasksUserError

__all__ = ["TasksError", "TasksRuntimeError", "TasksUserError"]
