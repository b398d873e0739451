"""The official SDKs accept our rendered requests: built for real, captured before the network."""

from __future__ import annotations

import json
from typing import Any

import pytest

from provider_fixtures import FIXTURES
from turnlog import providers
from turnlog.core.fold import fold

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai")
httpx = pytest.importorskip("httpx2")
pydantic = pytest.importorskip("pydantic")


class Captured(Exception):
    """Raised by the transport once it holds the request: nothing is sent."""


class Capture:
    def __init__(self) -> None:
        self.body: dict[str, Any] | None = None
        self.url = ""

    def handler(self, request: Any) -> Any:
        self.body = json.loads(request.content)
        self.url = str(request.url)
        raise Captured

    def client(self) -> Any:
        return httpx.Client(transport=httpx.MockTransport(self.handler))


def payload_for(fixture: str, provider: str) -> dict[str, Any]:
    return providers.render(provider, fold(FIXTURES[fixture]()).messages)


@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_anthropic_sdk_sends_our_messages(fixture: str) -> None:
    payload = payload_for(fixture, "anthropic")
    adapter = pydantic.TypeAdapter(list[anthropic.types.MessageParam])
    adapter.validate_python(payload["messages"], strict=False)
    capture = Capture()
    client = anthropic.Anthropic(api_key="test", http_client=capture.client(), max_retries=0)
    extra = {"system": payload["system"]} if "system" in payload else {}
    with pytest.raises(Exception) as info:
        client.messages.create(
            model="claude-test", max_tokens=64, messages=payload["messages"], **extra
        )
    assert capture.body is not None, info.value
    assert capture.body["messages"] == payload["messages"]
    assert capture.body.get("system") == payload.get("system")
    assert capture.url.endswith("/v1/messages")


@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_openai_chat_sdk_sends_our_messages(fixture: str) -> None:
    payload = payload_for(fixture, "openai-chat")
    adapter = pydantic.TypeAdapter(list[openai.types.chat.ChatCompletionMessageParam])
    adapter.validate_python(payload["messages"], strict=False)
    capture = Capture()
    client = openai.OpenAI(api_key="test", http_client=capture.client(), max_retries=0)
    with pytest.raises(Exception) as info:
        client.chat.completions.create(model="gpt-test", messages=payload["messages"])
    assert capture.body is not None, info.value
    assert capture.body["messages"] == payload["messages"]
    assert capture.url.endswith("/chat/completions")


@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_openai_responses_sdk_sends_our_input(fixture: str) -> None:
    payload = payload_for(fixture, "openai-responses")
    adapter = pydantic.TypeAdapter(openai.types.responses.ResponseInputParam)
    adapter.validate_python(payload["input"], strict=False)
    capture = Capture()
    client = openai.OpenAI(api_key="test", http_client=capture.client(), max_retries=0)
    with pytest.raises(Exception) as info:
        client.responses.create(model="gpt-test", input=payload["input"])
    assert capture.body is not None, info.value
    assert capture.body["input"] == payload["input"]
    assert capture.url.endswith("/responses")


@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_gemini_sdk_sends_our_contents(fixture: str) -> None:
    from google.genai import types

    payload = payload_for(fixture, "gemini")
    # The SDK's own typed models parse every content.
    contents = [types.Content.model_validate(c) for c in payload["contents"]]
    capture = Capture()
    client = genai.Client(
        api_key="test",
        http_options=types.HttpOptions(
            httpx_client=capture.client(), retry_options=types.HttpRetryOptions(attempts=1)
        ),
    )
    config = None
    if "systemInstruction" in payload:
        config = types.GenerateContentConfig(
            system_instruction=types.Content.model_validate(payload["systemInstruction"])
        )
    with pytest.raises(Exception) as info:
        client.models.generate_content(model="gemini-test", contents=contents, config=config)
    assert capture.body is not None, info.value
    assert capture.body["contents"] == payload["contents"]
    if "systemInstruction" in payload:
        assert capture.body["systemInstruction"]["parts"] == payload["systemInstruction"]["parts"]
    assert ":generateContent" in capture.url
