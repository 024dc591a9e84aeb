"""Model strings such as "openai:gpt-4o-mini" resolve to the httpx clients."""

from __future__ import annotations

import pytest

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.models.anthropic import AnthropicModel
from pytest_agentfaults.runtime.models.base import ModelRequest, ModelResponse
from pytest_agentfaults.runtime.models.ollama import OllamaModel
from pytest_agentfaults.runtime.models.openai import OpenAIModel
from pytest_agentfaults.runtime.models.resolve import PREFIXES, resolve_model


def test_openai_strings_use_the_key_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-resolve-0123456789")
    model = resolve_model("openai:gpt-4o-mini")
    assert isinstance(model, OpenAIModel)
    assert model.name == "openai:gpt-4o-mini"


def test_anthropic_strings(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    model = resolve_model("anthropic:claude-3-5-haiku-latest")
    assert isinstance(model, AnthropicModel)
    assert model.model == "claude-3-5-haiku-latest"


def test_ollama_strings_keep_the_tag_and_read_ollama_host(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11434")
    model = resolve_model("ollama:llama3.2:3b")
    assert isinstance(model, OllamaModel)
    assert model.model == "llama3.2:3b"
    assert model.url == "http://gpu-box:11434/api/chat"


def test_the_prefix_is_case_insensitive_and_spaces_are_ignored(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-resolve-0123456789")
    assert resolve_model(" OpenAI:gpt-4o ").name == "openai:gpt-4o"


def test_a_model_object_passes_through():
    class Echo:
        name = "echo"

        def request(self, request: ModelRequest) -> ModelResponse:
            raise NotImplementedError

        async def arequest(self, request: ModelRequest) -> ModelResponse:
            raise NotImplementedError

    echo = Echo()
    assert resolve_model(echo) is echo


def test_an_unknown_prefix_lists_the_valid_ones():
    with pytest.raises(UsageError) as caught:
        resolve_model("gemini:gemini-2.0-flash")
    assert str(caught.value) == (
        "unknown model prefix 'gemini:' in 'gemini:gemini-2.0-flash'; use one of 'anthropic:', "
        "'ollama:', 'openai:' (e.g. 'openai:gpt-4o-mini'), or pass a Model object"
    )


@pytest.mark.parametrize(
    ("spec", "guess"),
    [
        ("gpt-4o-mini", "'openai:gpt-4o-mini'"),
        ("claude-3-5-haiku-latest", "'anthropic:claude-3-5-haiku-latest'"),
        ("llama3.2", "'ollama:llama3.2'"),
    ],
)
def test_a_missing_prefix_suggests_one(spec, guess):
    with pytest.raises(UsageError, match=f"has no provider prefix.*did you mean {guess}"):
        resolve_model(spec)


def test_a_missing_model_name():
    with pytest.raises(UsageError, match="has no model name after 'ollama:'; write it like"):
        resolve_model("ollama:")


def test_a_missing_key_names_the_variable_before_any_request(respx_mock):
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o-mini")
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY"):
        resolve_model("anthropic:claude-3-5-haiku-latest")
    assert respx_mock.calls.call_count == 0


def test_something_else_is_a_usage_error():
    with pytest.raises(UsageError, match="neither a model string"):
        resolve_model(42)  # type: ignore[arg-type]


def test_prefixes_are_documented():
    assert sorted(PREFIXES) == ["anthropic", "ollama", "openai"]
