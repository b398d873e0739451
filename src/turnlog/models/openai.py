"""The official `openai` client as the loop's model: Chat Completions or Responses."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from turnlog.core.fold import Message
from turnlog.events import TokenUsage, ToolCall
from turnlog.models.request_check import CheckMode, rendered
from turnlog.runtime.loop import Reply

if TYPE_CHECKING:
    import openai

# The client: a sync one makes a model whose calls return a Reply, an async
# one a model whose calls return an awaitable of it.
C = TypeVar("C")


def _data(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    dumped: dict[str, Any] = value.model_dump(mode="json", exclude_none=True)
    return dumped


def _arguments(raw: Any) -> Any:
    """Parsed JSON arguments; a string that is not JSON is kept as it came."""
    if not isinstance(raw, str):
        return raw if raw is not None else {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _usage(data: dict[str, Any], input_key: str, output_key: str) -> TokenUsage | None:
    """The response's token usage and model, when it reports them."""
    usage = data.get("usage") or {}
    found = TokenUsage(
        input_tokens=usage.get(input_key),
        output_tokens=usage.get(output_key),
        model=data.get("model"),
    )
    return found if found != TokenUsage() else None


def chat_reply_of(response: Any) -> Reply:
    """A `ChatCompletion` as a Reply: the first choice's text and tool calls."""
    data = _data(response)
    message = data["choices"][0]["message"]
    calls = tuple(
        ToolCall(
            id=call["id"],
            name=call["function"]["name"],
            arguments=_arguments(call["function"].get("arguments")),
        )
        for call in message.get("tool_calls") or ()
    )
    return Reply(
        content=message.get("content") or "",
        tool_calls=calls,
        usage=_usage(data, "prompt_tokens", "completion_tokens"),
    )


def responses_reply_of(response: Any) -> Reply:
    """A `Response` as a Reply: reasoning items kept verbatim (with their
    encrypted content) in their place among the text parts, function calls as
    tool calls keeping their item id."""
    parts: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    data = _data(response)
    for item in data.get("output", []):
        kind = item.get("type")
        if kind == "reasoning":
            parts.append(item)
        elif kind == "message":
            for piece in item.get("content", []):
                if piece.get("type") == "output_text":
                    parts.append({"type": "text", "text": piece.get("text", "")})
        elif kind == "function_call":
            extra = {"item_id": item["id"]} if item.get("id") else None
            calls.append(
                ToolCall(
                    id=item["call_id"],
                    name=item["name"],
                    arguments=_arguments(item.get("arguments")),
                    extra=extra,
                )
            )
    usage = _usage(data, "input_tokens", "output_tokens")
    return Reply(content=parts, tool_calls=tuple(calls), usage=usage)


class _OpenAIModel(Generic[C]):
    """Typed by its client: a sync client's model returns a `Reply`, an
    async one's an awaitable of it."""

    provider = ""

    def __init__(
        self,
        client: C,
        *,
        model: str,
        tools: Sequence[dict[str, Any]] = (),
        check: CheckMode = "warn",
        **options: Any,
    ) -> None:
        # Typed loosely inside: duck-typed clients (test doubles) work too.
        self.client: Any = client
        self.model = model
        self.tools = list(tools)
        self.check = check
        self.options = options
        self.requests: int = 0

    def request(self, messages: Sequence[Message]) -> dict[str, Any]:
        raise NotImplementedError

    def _send(self, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _reply(self, response: Any) -> Reply:
        raise NotImplementedError

    @overload
    def __call__(  # type: ignore[overload-overlap]  # an async client's model awaits
        self: _OpenAIModel[openai.AsyncOpenAI], messages: Sequence[Message]
    ) -> Awaitable[Reply]: ...

    @overload
    def __call__(self, messages: Sequence[Message]) -> Reply: ...

    def __call__(self, messages: Sequence[Message]) -> Reply | Awaitable[Reply]:
        self.requests += 1
        response = self._send(self.request(messages))
        if inspect.isawaitable(response):
            return _later(response, self._reply)
        return self._reply(response)


async def _later(response: Awaitable[Any], convert: Callable[[Any], Reply]) -> Reply:
    return convert(await response)


class OpenAIChatModel(_OpenAIModel[C]):
    """`openai.OpenAI` (or `AsyncOpenAI`) Chat Completions as the loop's model.

    The log's transcript is rendered as chat messages, checked against the log
    (`check`), and sent with the tools and options given.
    """

    provider = "openai-chat"

    def request(self, messages: Sequence[Message]) -> dict[str, Any]:
        payload = rendered(self.provider, messages, self.check)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": payload["messages"],
            **self.options,
        }
        if self.tools:
            kwargs["tools"] = self.tools
        return kwargs

    def _send(self, kwargs: dict[str, Any]) -> Any:
        return self.client.chat.completions.create(**kwargs)

    def _reply(self, response: Any) -> Reply:
        return chat_reply_of(response)


class OpenAIResponsesModel(_OpenAIModel[C]):
    """`openai.OpenAI` (or `AsyncOpenAI`) Responses as the loop's model.

    Stateless on purpose (`store=False`): the log is the conversation, so
    every request carries it whole, and reasoning comes back encrypted
    (`include=["reasoning.encrypted_content"]`) to be replayed verbatim.
    """

    provider = "openai-responses"

    def request(self, messages: Sequence[Message]) -> dict[str, Any]:
        payload = rendered(self.provider, messages, self.check)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": payload["input"],
            "store": False,
            "include": ["reasoning.encrypted_content"],
            **self.options,
        }
        if self.tools:
            kwargs["tools"] = self.tools
        return kwargs

    def _send(self, kwargs: dict[str, Any]) -> Any:
        return self.client.responses.create(**kwargs)

    def _reply(self, response: Any) -> Reply:
        return responses_reply_of(response)
