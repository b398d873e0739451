"""The official `anthropic` client as the loop's model: Messages API in, a Reply out."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from turnlog.core.fold import Message
from turnlog.events import TokenUsage, ToolCall
from turnlog.models.request_check import CheckMode, rendered
from turnlog.runtime.loop import Reply

if TYPE_CHECKING:
    import anthropic

# The client: a sync one makes a model whose calls return a Reply, an async
# one a model whose calls return an awaitable of it.
C = TypeVar("C")

PROVIDER = "anthropic"
# Blocks kept verbatim in the log and replayed on the next request: the API
# checks the signature of thinking it is sent back.
_VERBATIM = frozenset({"thinking", "redacted_thinking"})


def _dump(block: Any) -> dict[str, Any]:
    if isinstance(block, dict):
        return dict(block)
    dumped: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    return dumped


def reply_of(response: Any) -> Reply:
    """A `Message` response (SDK object or dict) as a Reply: text and signed
    thinking as content parts, in order; `tool_use` blocks as tool calls."""
    parts: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    blocks = response["content"] if isinstance(response, dict) else response.content
    for block in blocks:
        data = _dump(block)
        kind = data.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": data.get("text", "")})
        elif kind in _VERBATIM:
            parts.append(data)
        elif kind == "tool_use":
            calls.append(
                ToolCall(id=data["id"], name=data["name"], arguments=data.get("input", {}))
            )
    return Reply(content=parts, tool_calls=tuple(calls), usage=_usage(response))


def _usage(response: Any) -> TokenUsage | None:
    """The message's token usage and model, when it reports them."""
    data = response if isinstance(response, dict) else _dump(response)
    usage = data.get("usage") or {}
    found = TokenUsage(
        input_tokens=usage.get("input_tokens"),
        output_tokens=usage.get("output_tokens"),
        model=data.get("model"),
    )
    return found if found != TokenUsage() else None


class AnthropicModel(Generic[C]):
    """`anthropic.Anthropic` (or `AsyncAnthropic`) as a model for `run_turn`
    (or `arun_turn`). Typed by its client: a sync client's model returns a
    `Reply`, an async one's an awaitable of it.

    Each call renders the log's transcript for the Messages API, checks it
    against the log (`check`: "warn", "strict" or "off"), sends it with the
    given tools and options, and returns the reply with thinking blocks and
    their signatures kept verbatim, so they are replayed on the next request.
    """

    def __init__(
        self,
        client: C,
        *,
        model: str,
        max_tokens: int = 4096,
        tools: Sequence[dict[str, Any]] = (),
        check: CheckMode = "warn",
        **options: Any,
    ) -> None:
        # Typed loosely inside: duck-typed clients (test doubles) work too.
        self.client: Any = client
        self.model = model
        self.max_tokens = max_tokens
        self.tools = list(tools)
        self.check = check
        self.options = options
        self.requests: int = 0

    def request(self, messages: Sequence[Message]) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for this transcript."""
        payload = rendered(PROVIDER, messages, self.check)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": payload["messages"],
            **self.options,
        }
        if "system" in payload:
            kwargs["system"] = payload["system"]
        if self.tools:
            kwargs["tools"] = self.tools
        return kwargs

    @overload
    def __call__(  # type: ignore[overload-overlap]  # an async client's model awaits
        self: AnthropicModel[anthropic.AsyncAnthropic], messages: Sequence[Message]
    ) -> Awaitable[Reply]: ...

    @overload
    def __call__(self, messages: Sequence[Message]) -> Reply: ...

    def __call__(self, messages: Sequence[Message]) -> Reply | Awaitable[Reply]:
        self.requests += 1
        response = self.client.messages.create(**self.request(messages))
        if inspect.isawaitable(response):
            return _later(response)
        return reply_of(response)


async def _later(response: Awaitable[Any]) -> Reply:
    return reply_of(await response)
