"""The official anthropic and openai clients as the loop's model, over an HTTP
transport that answers from fixtures (no network): reasoning kept and replayed,
every request checked against the log, a crashed run revived."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import openai
import pytest

import turnlog
from paths import TESTS
from turnlog import events as ev
from turnlog.core.fold import Message
from turnlog.events import ToolCall
from turnlog.models import (
    AnthropicModel,
    OpenAIChatModel,
    OpenAIResponsesModel,
    RequestCheckError,
    check_request,
)
from turnlog.providers import render
from turnlog.runtime.async_loop import aopen, arun_turn
from turnlog.runtime.loop import Tool, continue_run, run_turn

FIXTURES = TESTS / "fixtures" / "models"
WEATHER = {"weather": Tool(run=lambda city: f"{city}: 3C", idempotency="read_only")}


class Replay:
    """An HTTP transport that answers each request with the next fixture, in order,
    and keeps the JSON bodies it was sent."""

    def __init__(self, *names: str) -> None:
        self.responses = [json.loads((FIXTURES / f"{name}.json").read_text()) for name in names]
        self.sent: list[dict[str, Any]] = []
        self.paths: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(json.loads(request.content))
        self.paths.append(request.url.path)
        return httpx.Response(200, json=self.responses[len(self.sent) - 1])

    def sync_client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))

    def async_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))


def anthropic_client(replay: Replay) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", http_client=replay.sync_client(), max_retries=0)


def openai_client(replay: Replay) -> openai.OpenAI:
    return openai.OpenAI(api_key="test", http_client=replay.sync_client(), max_retries=0)


def test_anthropic_thinking_and_signature_are_replayed_verbatim(tmp_path: Path) -> None:
    replay = Replay("anthropic-1-thinking-tool", "anthropic-2-final")
    fixture = replay.responses[0]["content"]
    model = AnthropicModel(
        anthropic_client(replay),
        model="claude-test",
        tools=[{"name": "weather"}],
        check="strict",
    )
    with turnlog.open(tmp_path, "a") as log:
        log.system("Be brief.")
        reply = run_turn(log, model, WEATHER, "Weather in Oslo?")
    assert ev.content_text(reply.content) == "It is 3 degrees in Oslo."
    assert replay.paths == ["/v1/messages", "/v1/messages"]
    second = replay.sent[1]
    assert second["system"] == "Be brief."
    assert second["messages"][1] == {"role": "assistant", "content": fixture}
    assert second["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
            "content": "Oslo: 3C",
        }
    ]
    # The log holds the signed block as it came, byte for byte.
    stored = next(
        e.data
        for e in turnlog.JSONLStore(tmp_path).read("a")
        if isinstance(e.data, ev.AssistantMessage)
    )
    assert stored.content[0] == fixture[0]


def test_openai_chat_parallel_calls(tmp_path: Path) -> None:
    replay = Replay("openai-chat-1-tool", "openai-chat-2-final")
    model = OpenAIChatModel(openai_client(replay), model="gpt-4.1", check="strict")
    with turnlog.open(tmp_path, "c") as log:
        reply = run_turn(log, model, WEATHER, "Oslo and Bergen?")
    assert reply.content == "Oslo is at 3 degrees and Bergen at 7."
    assert replay.paths == ["/v1/chat/completions"] * 2
    second = replay.sent[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool"]
    assert [m["tool_call_id"] for m in second[2:]] == ["call_12345xyz", "call_67890abc"]
    assert json.loads(second[1]["tool_calls"][1]["function"]["arguments"]) == {"city": "Bergen"}


def test_openai_responses_reasoning_is_replayed_verbatim(tmp_path: Path) -> None:
    replay = Replay("openai-responses-1-reasoning-tool", "openai-responses-2-final")
    reasoning, call = replay.responses[0]["output"]
    model = OpenAIResponsesModel(openai_client(replay), model="o4-mini", check="strict")
    with turnlog.open(tmp_path, "r") as log:
        reply = run_turn(log, model, WEATHER, "Weather in Oslo?")
    assert ev.content_text(reply.content) == "It is 3 degrees in Oslo."
    assert replay.paths == ["/v1/responses"] * 2
    sent = replay.sent[1]
    assert sent["store"] is False and sent["include"] == ["reasoning.encrypted_content"]
    items = sent["input"]
    assert items[1] == reasoning
    assert items[2]["type"] == "function_call" and items[2]["id"] == call["id"]
    assert items[2]["call_id"] == call["call_id"]
    assert items[3] == {
        "type": "function_call_output",
        "call_id": call["call_id"],
        "output": "Oslo: 3C",
    }


def crash_after_dispatch(path: Path, reply: turnlog.Reply) -> None:
    """A run killed mid-tool: the reply and the dispatch are in the log, no result."""
    with turnlog.open(path, "k") as log:
        log.user("Weather in Oslo?")
        log.append(ev.TurnStart(turn=1))
        log.append(ev.StepStart(turn=1, step=1))
        log.assistant(reply.content, reply.tool_calls)
        for call in reply.tool_calls:
            log.append(ev.ToolDispatch(call_id=call.id, name=call.name))


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses"])
def test_revived_run_sends_the_call_and_its_synthetic_result(tmp_path: Path, provider: str) -> None:
    names = {
        "anthropic": ("anthropic-1-thinking-tool", "anthropic-2-final"),
        "openai-chat": ("openai-chat-1-tool", "openai-chat-2-final"),
        "openai-responses": ("openai-responses-1-reasoning-tool", "openai-responses-2-final"),
    }[provider]
    first = Replay(names[0])
    make: Any = {
        "anthropic": lambda r: AnthropicModel(anthropic_client(r), model="m", check="strict"),
        "openai-chat": lambda r: OpenAIChatModel(openai_client(r), model="m", check="strict"),
        "openai-responses": lambda r: OpenAIResponsesModel(
            openai_client(r), model="m", check="strict"
        ),
    }[provider]
    opening = make(first)([Message(role="user", content="Weather in Oslo?", seq=1)])
    crash_after_dispatch(tmp_path, opening)

    replay = Replay(names[1])
    with turnlog.open(tmp_path, "k") as log:
        assert turnlog.revive(log).revived
        reply = continue_run(log, turnlog.AgentSpec(model=make(replay), tools=WEATHER))
    assert ev.content_text(reply.content)
    sent = json.dumps(replay.sent[0])
    for call in opening.tool_calls:
        assert sent.count(call.id) >= 2  # the call and its synthetic result, same id
    assert "tool_outcome_unknown" not in sent  # the risk is a field; the text says it plainly
    assert "may have run" in sent or "MAY HAVE RUN" in sent.upper()


def test_async_anthropic_client_in_the_async_loop(tmp_path: Path) -> None:
    replay = Replay("anthropic-1-thinking-tool", "anthropic-2-final")

    async def main() -> turnlog.Reply:
        client = anthropic.AsyncAnthropic(
            api_key="test", http_client=replay.async_client(), max_retries=0
        )
        model = AnthropicModel(client, model="m", check="strict")
        log = await aopen(tmp_path, "aa")
        async with log:
            return await arun_turn(log, model, WEATHER, "Weather in Oslo?")

    reply = asyncio.run(main())
    assert ev.content_text(reply.content) == "It is 3 degrees in Oslo."
    assert len(replay.sent) == 2


def test_request_check_modes(caplog: pytest.LogCaptureFixture) -> None:
    messages = [
        Message(role="user", content="hi", seq=1),
        Message(role="assistant", content="", seq=2, tool_calls=(ToolCall(id="c1", name="t"),)),
        Message(role="tool", content="ok", seq=3, call_id="c1"),
    ]
    good = render("openai-chat", messages)
    assert check_request("openai-chat", good, messages, "strict") == []
    dropped = {"messages": good["messages"][:2]}  # the result is missing
    swapped = {"messages": [good["messages"][0], {"role": "user", "content": "hello"}]}
    for bad in (dropped, swapped):
        with pytest.raises(RequestCheckError) as caught:
            check_request("openai-chat", bad, messages, "strict")
        assert caught.value.hint
        with caplog.at_level(logging.WARNING, logger="turnlog.models"):
            assert check_request("openai-chat", bad, messages, "warn")
        assert "request invariant" in caplog.text
        assert check_request("openai-chat", bad, messages, "off") == []
    with pytest.raises(turnlog.UsageError):
        check_request("openai-chat", good, messages, "loud")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fixtures", "make"),
    [
        (
            ("anthropic-1-thinking-tool", "anthropic-2-final"),
            lambda r: AnthropicModel(anthropic_client(r), model="claude-test", check="strict"),
        ),
        (
            ("openai-chat-1-tool", "openai-chat-2-final"),
            lambda r: OpenAIChatModel(openai_client(r), model="gpt-4.1", check="strict"),
        ),
        (
            ("openai-responses-1-reasoning-tool", "openai-responses-2-final"),
            lambda r: OpenAIResponsesModel(openai_client(r), model="o4-mini", check="strict"),
        ),
    ],
    ids=["anthropic", "openai-chat", "openai-responses"],
)
def test_each_reply_records_its_token_usage_and_never_sends_it(
    tmp_path: Path, fixtures: tuple[str, str], make: Any
) -> None:
    replay = Replay(*fixtures)
    with turnlog.open(tmp_path, "u") as log:
        run_turn(log, make(replay), WEATHER, "Weather in Oslo and Bergen?")
    recorded = [
        e.data.usage
        for e in turnlog.JSONLStore(tmp_path).read("u")
        if isinstance(e.data, ev.AssistantMessage)
    ]
    expected = []
    for response in replay.responses:
        usage = response["usage"]
        expected.append(
            ev.TokenUsage(
                input_tokens=usage.get("input_tokens", usage.get("prompt_tokens")),
                output_tokens=usage.get("output_tokens", usage.get("completion_tokens")),
                model=response["model"],
            )
        )
    assert recorded == expected
    # The usage is the log's, never part of a request.
    sent = json.dumps(replay.sent)
    assert '"input_tokens"' not in sent and '"prompt_tokens"' not in sent
