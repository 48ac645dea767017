import importlib.util
from pathlib import Path

import pytest

_path = Path(__file__).parents[1] / "rollout" / "data" / "sample_task.py"
_spec = importlib.util.spec_from_file_location("weft_tasks_tests_sample_task", _path)
assert _spec and _spec.loader
sample = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sample)


@pytest.fixture
def graph():
    return sample.sample_graph()


from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: E402


class ScriptedChat(FakeMessagesListChatModel):
    """Replays scripted AIMessages in order (local until weft_core.testing lands)."""

    def bind_tools(self, tools, **kwargs):  # type: ignore[override]
        return self


@pytest.fixture
def scripted():
    """Build a scripted chat model: scripted(["reply", AIMessage(...)])."""

    def make(responses):
        from langchain_core.messages import AIMessage

        return ScriptedChat(
            responses=[r if isinstance(r, AIMessage) else AIMessage(r) for r in responses]
        )

    return make
