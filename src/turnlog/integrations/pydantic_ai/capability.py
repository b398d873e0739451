"""turnlog under Pydantic AI: a capability that writes ahead of every tool.

    async with TurnlogCapability("sessions", "support-42") as cap:
        result = await agent.run(text, message_history=cap.messages(), capabilities=[cap])

The capability writes the user's prompt and each model reply as they
happen, a durable `tool_dispatch` before each tool body runs (and before an
output tool's output function, which Pydantic AI runs with no tool hook),
and the result (or the error) after it. `cap.messages()` returns the session as
Pydantic AI messages: after a crash and `turnlog recover` (or
`revive=True`), every owed call has a `ToolReturnPart` saying what is
known, marked `outcome='interrupted'` as Pydantic AI marks its own repairs,
so the run resumes with the call answered instead of running the tool again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from pydantic_ai import DeferredToolRequests, messages as pm
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry, SkipToolExecution, ToolFailed

from turnlog import events as ev
from turnlog.core.fold import Message
from turnlog.errors import UsageError
from turnlog.events import TokenUsage, ToolCall
from turnlog.handle.log import Log
from turnlog.integrations.kit.answered import owed_here, recorded_answer
from turnlog.integrations.kit.boundaries import begin_step, begin_turn_if_none, end_turn
from turnlog.integrations.kit.engines import check_engine
from turnlog.integrations.kit.handles import acquire, release
from turnlog.integrations.kit.history import HistoryCheck, check_history, check_history_mode
from turnlog.integrations.kit.runs import fail_run, refuse_interrupted, refuse_unfinished
from turnlog.integrations.kit.tool_calls import (
    AheadCall,
    check_idempotency_map,
    dispatch_ahead,
    tool_idempotency,
)
from turnlog.integrations.pydantic_ai.engines import open_for_run, output_once, tool_once
from turnlog.integrations.pydantic_ai.pauses import (
    acting_on_approval,
    drop_pauses,
    pause_deferred,
    record_deferred_results,
)
from turnlog.runtime.async_loop import AsyncLog
from turnlog.stores import Store
from turnlog.text import display_text, foreign_text

# Origins of the results turnlog writes itself for calls that never returned.
_REPAIRS = frozenset({ev.Origin.RECOVERY.value, ev.Origin.UNWIND.value})


@dataclass
class TurnlogCapability(AbstractCapability[Any]):
    """Records a Pydantic AI run in a turnlog session (see the module docstring).

    A handle with a lifetime: `async with TurnlogCapability(...) as cap:`, or
    `await cap.close()`. Capabilities on the same session in one process share
    one writer. `recover=True` / `revive=True` repair a crashed session when
    it is opened; without them a run on it is refused. `idempotency` maps tool
    names to `read_only`, `idempotent`, `destructive` or `unknown` (a tool's
    `metadata={"idempotency": ...}` says the same). `history` checks that the
    run's `message_history` is the log's transcript or extends it: `warn`
    (default), `strict` (raises) or `off`.
    """

    target: str | os.PathLike[str] | Store
    session_id: str | None = None
    durability: str = "barrier"
    idempotency: Mapping[str, str] | None = None
    recover: bool = False
    revive: bool = False
    history: HistoryCheck = "warn"
    # A durable engine that runs the agent ("dbos", "prefect"): each run
    # writes for the engine's run, so a run the engine executes again after a
    # crash meets its earlier writes, and a tool call a crash cut short is
    # answered R1 instead of running again (docs/engines.md).
    engine: str | None = None
    _log: AsyncLog | None = field(default=None, init=False, repr=False)
    _closed: bool = field(default=False, init=False, repr=False)
    # The prompt of each run in progress (by run id), written with the run's
    # first step: after the tools are checked, so a run refused for its tools
    # writes nothing.
    _prompts: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    # Under an engine: the output calls this execution of the run dispatched.
    _outputs_dispatched: set[str] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        self.idempotency = check_idempotency_map(self.idempotency)
        check_history_mode(self.history)
        if self.engine is not None:
            check_engine(self.engine)
            if self.recover or self.revive:
                raise UsageError(
                    "a capability under a durable engine never recovers or revives on open",
                    hint="the engine runs the agent again after a crash; drop recover/revive",
                )

    @property
    def log(self) -> AsyncLog:
        if self._closed:
            raise UsageError(
                "the TurnlogCapability is closed",
                hint="build a new TurnlogCapability for the session (handles on one session "
                "share its writer)",
            )
        if self._log is None:
            handle: Log = acquire(
                self.target,
                self.session_id,
                durability=self.durability,
                recover=self.recover,
                revive=self.revive,
            )
            try:
                refuse_interrupted(handle)
            except BaseException:
                release(handle)
                raise
            self._log = AsyncLog(handle, release=release)
            self.session_id = handle.session_id
        return self._log

    def messages(self) -> list[pm.ModelMessage]:
        """The session as Pydantic AI messages; synthetic results are
        `ToolReturnPart(outcome='interrupted')`s."""
        return to_model_messages(self.log.log.messages)

    async def close(self) -> None:
        """Release the session (the last handle in the process closes it). Idempotent."""
        self._closed = True
        if self._log is not None:
            await self._log.close()
            self._log = None

    async def __aenter__(self) -> TurnlogCapability:
        _ = self.log  # open now: a crashed session is refused here, not mid-run
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- the hooks ------------------------------------------------------------------------

    async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
        if self.engine is None:
            return await self._wrap_run(ctx, handler)
        # One handle per engine run: the engine may run it again from the top.
        self._log = await open_for_run(self.target, self.session_id, self.durability, self.engine)
        self.session_id = self._log.log.session_id
        self._outputs_dispatched.clear()
        try:
            return await self._wrap_run(ctx, handler)
        finally:
            log, self._log = self._log, None
            await log.close()

    async def _wrap_run(self, ctx: Any, handler: Any) -> Any:
        log = self.log
        before = _open_turn_seq(log.log)
        try:
            return await handler()
        except BaseException as exc:
            # The run raised or was cancelled: close its turn here, as the
            # reference loop does, so the next run on the session starts clean.
            # Only a turn this run opened: a run refused for another run's
            # open turn must not close it. Synchronous on purpose: a
            # cancelled task may not get to await.
            # Not while an engine run is replayed: the log holds that turn's
            # end, or the run diverged and nothing more is written.
            replaying = log.log.held.replay is not None
            if _open_turn_seq(log.log) not in (None, before) and not replaying:
                fail_run(log.log, exc)
            raise
        finally:
            self._prompts.pop(str(getattr(ctx, "run_id", "")), None)

    async def before_run(self, ctx: Any) -> None:
        log = self.log
        given = _shape(getattr(ctx, "messages", None) or [])
        # Light once the transcript is read: then neither step does I/O.
        run = log.call_light if log.log.transcript_read else log.call
        if ctx.prompt and log.log.awaiting:
            # A new prompt, not the deferred results: the paused calls are
            # left behind undecided (A3: the caller held their decisions).
            await log.call(drop_pauses, log.log)
        await run(_check_start, log.log, given, self.history)
        prompt = ctx.prompt
        if prompt:
            text = prompt if isinstance(prompt, str) else "\n".join(str(p) for p in prompt)
            self._prompts[str(getattr(ctx, "run_id", ""))] = text

    async def prepare_tools(self, ctx: Any, tool_defs: list[Any]) -> list[Any]:
        # Checked before the run writes anything: a typo found at the first
        # dispatch would leave the turn open mid-run.
        for tool_def in tool_defs:
            tool_idempotency(
                tool_def.name, self.idempotency or {}, getattr(tool_def, "metadata", None)
            )
        return tool_defs

    async def prepare_output_tools(self, ctx: Any, tool_defs: list[Any]) -> list[Any]:
        # Output tools are dispatched too (see `before_output_validate`): what
        # their definitions say is checked here, before the run writes anything.
        return await self.prepare_tools(ctx, tool_defs)

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        prompt = self._prompts.pop(str(getattr(ctx, "run_id", "")), None)
        if prompt is not None:
            if self.engine is not None:
                # An engine run's writes start with its turn: the turn is
                # stamped with the run, and a replay is found from it.
                await self.log.call_light(begin_turn_if_none, self.log.log)
            await self.log.user(prompt)
        messages = list(getattr(ctx, "messages", None) or [])
        await self.log.call_light(_settle_and_step, self.log.log, messages)
        return request_context

    async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
        parts: list[Any] = []
        calls: list[ToolCall] = []
        for part in response.parts:
            if isinstance(part, pm.TextPart):
                parts.append({"type": "text", "text": part.content})
            elif isinstance(part, pm.ThinkingPart):
                thinking: dict[str, Any] = {"type": "thinking", "thinking": part.content}
                if part.signature:
                    thinking["signature"] = part.signature
                parts.append(thinking)
            elif isinstance(part, pm.ToolCallPart):
                calls.append(
                    ToolCall(
                        id=part.tool_call_id, name=part.tool_name, arguments=part.args_as_dict()
                    )
                )
        await self.log.assistant(parts, calls, usage=_usage_of(response))
        return response

    async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        # Pydantic AI runs the calls a history ends with (a run resumed on a
        # history saved before their results): one the log has answered, by
        # the tool or by recovery, is handed that answer and not run again.
        log = self.log
        idempotency = tool_idempotency(
            call.tool_name, self.idempotency or {}, getattr(tool_def, "metadata", None)
        )
        if self.engine is not None:
            await tool_once(log, call, idempotency)
            return args
        owed = await log.call_light(owed_here, log.log, call.tool_call_id)
        answer = None if owed else await log.call(recorded_answer, log.log, call.tool_call_id)
        if answer is not None:
            if answer.is_error:
                raise ToolFailed(answer.text)
            raise SkipToolExecution(answer.text)
        await log.call_light(acting_on_approval, log.log, call.tool_call_id)
        # Durable before the tool body runs: recovery's "not started" rests on it.
        dispatch = ev.ToolDispatch(
            call_id=call.tool_call_id, name=call.tool_name, idempotency=idempotency
        )
        await self.log.append(dispatch, sync=True)
        return args

    # Pydantic AI runs an output tool's call itself: its arguments are
    # validated, then the output function (user code, which may charge a
    # card) and the output validators run, with no tool hook at all. The
    # output hooks below fire before that code, for every output tool call,
    # so the call is dispatched there, ahead of it, as a tool is in
    # `before_tool_execute`. Its answer ("Final result processed", a retry
    # prompt, "Output tool not used") is recorded by `_settle` as any
    # dispatched call's. A call the log does not hold yet (a streamed reply,
    # validated before it is recorded) or already dispatched is left alone.

    async def before_output_validate(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
        await self._dispatch_output(ctx, output_context)
        return output

    async def before_output_process(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
        # Again here: a capability that wraps validation may skip the hook above.
        await self._dispatch_output(ctx, output_context)
        return output

    async def _dispatch_output(self, ctx: Any, output_context: Any) -> None:
        call = getattr(output_context, "tool_call", None)
        if call is None:
            return  # text, native or prompted output: no call to answer
        log = self.log
        tool_def = getattr(output_context, "tool_def", None)
        idempotency = tool_idempotency(
            call.tool_name, self.idempotency or {}, getattr(tool_def, "metadata", None)
        )
        if self.engine is not None:
            await output_once(log, call, idempotency, self._outputs_dispatched)
            return
        if not await log.call_light(owed_here, log.log, call.tool_call_id):
            # A run resumed on a history that ends with the call (saved
            # before its answer) processes it again: one the log has
            # answered (by its output function, or by recovery after a
            # crash inside it) does not run again. An output has no answer
            # to be handed in place of the function's value, so the model is
            # told the recorded answer, as Pydantic AI tells it of an output
            # it could not use, and decides whether to ask again. A call
            # only this reply asks for (a streamed reply the log does not
            # hold yet) is not the run's history, and is left alone.
            if _asks(ctx, call.tool_call_id):
                answer = await log.call(recorded_answer, log.log, call.tool_call_id)
                if answer is not None:
                    raise ModelRetry(answer.text)
            return
        ahead = AheadCall(call_id=call.tool_call_id, name=call.tool_name, idempotency=idempotency)
        await self.log.call_light(dispatch_ahead, self.log.log, [ahead])

    async def after_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any
    ) -> Any:
        await self.log.append(
            ev.ToolResult(
                call_id=call.tool_call_id, name=call.tool_name, content=foreign_text(result)
            )
        )
        return result

    async def on_tool_execute_error(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, error: Exception
    ) -> Any:
        await self.log.append(
            ev.ToolResult(
                call_id=call.tool_call_id,
                name=call.tool_name,
                content=f"{type(error).__name__}: {error}",
                is_error=True,
            )
        )
        raise error

    async def before_node_run(self, ctx: Any, *, node: Any) -> Any:
        # A run resumed with `deferred_tool_results`: its decisions about the
        # paused calls are recorded before any of them acts.
        results = getattr(node, "deferred_tool_results", None)
        if results is not None:
            await self.log.call_light(record_deferred_results, self.log.log, results)
        return node

    async def after_run(self, ctx: Any, *, result: Any) -> Any:
        messages = list(result.all_messages())
        if isinstance(getattr(result, "output", None), DeferredToolRequests):
            # The run stopped on purpose: its deferred calls wait, paused.
            await self.log.call_light(_settle_and_pause, self.log.log, messages, result.output)
        else:
            await self.log.call_light(_settle_and_end, self.log.log, messages)
        return result


def _asks(ctx: Any, call_id: str) -> bool:
    """The run's messages hold a reply asking for `call_id`."""
    return any(
        isinstance(message, pm.ModelResponse)
        and any(
            isinstance(part, pm.ToolCallPart) and part.tool_call_id == call_id
            for part in message.parts
        )
        for message in getattr(ctx, "messages", None) or ()
    )


def _open_turn_seq(log: Log) -> int | None:
    turn = log.open_turn
    return turn.seq if turn is not None else None


def _check_start(log: Log, given: list[tuple[str, tuple[str, ...]]], mode: HistoryCheck) -> None:
    """A run may start: no turn of an earlier run is left open, and the
    history it was given is the log's transcript or extends it."""
    if not log.paused:  # a paused turn is resumed with deferred_tool_results
        refuse_unfinished(
            log,
            how="a run on this handle ended without its turn closed; recover the session "
            "(`recover=True` on a new handle) before running again",
        )
    check_history(log, given, mode, what="the run's message_history")


def _settle_and_step(log: Log, messages: list[Any]) -> None:
    """Before a model request: settle what the framework answered, then step."""
    with log.lock:
        _settle(log, messages)
        begin_step(log)


def _settle_and_pause(log: Log, messages: list[Any], requests: DeferredToolRequests) -> None:
    """After a run that deferred calls: settle what the framework answered
    (the siblings that ran), then pause the deferred calls."""
    with log.lock:
        _settle(log, messages)
        pause_deferred(log, requests)


def _settle_and_end(log: Log, messages: list[Any]) -> None:
    """After the run: settle what the framework answered, then end the turn."""
    with log.lock:
        _settle(log, messages)
        end_turn(log)


def _settle(log: Log, messages: list[Any]) -> None:
    """Record what Pydantic AI answered for calls no tool hook answered: a
    retry prompt (the tool raised `ModelRetry`, its arguments failed
    validation, no tool has that name), the output tool's "Final result
    processed", a call skipped after the final result. Pydantic AI's own
    words, taken from the messages it sends the model next. A call that was
    never dispatched never started; its answer is recorded without a
    dispatch (the turn then claims nothing about calls it did not dispatch,
    which is pessimistic, not wrong)."""
    with log.lock:
        turn = log.open_turn
        owed = (
            {c.call_id: c for c in turn.calls if not c.answered and not c.waiting} if turn else {}
        )
        if not owed:
            return
        answers: dict[str, pm.ToolReturnPart | pm.RetryPromptPart] = {}  # newest per call
        for message in messages:
            if isinstance(message, pm.ModelRequest):
                for part in message.parts:
                    if isinstance(part, (pm.ToolReturnPart, pm.RetryPromptPart)):
                        answers[str(part.tool_call_id)] = part
        for call_id, call in owed.items():
            answer = answers.get(call_id)
            if answer is None:
                continue
            if isinstance(answer, pm.RetryPromptPart):
                text, is_error = answer.model_response(), True
            else:
                text = str(answer.model_response_str())
                is_error = getattr(answer, "outcome", "success") != "success"
            log.append(
                ev.ToolResult(call_id=call_id, name=call.name, content=text, is_error=is_error),
                allow_undispatched=call.dispatch is None,
            )


def _tool_return(message: Message, name: str, text: str) -> pm.ToolReturnPart:
    """A tool result as Pydantic AI's part. A result turnlog wrote for a call
    that never returned (recovery after a crash, or a live unwind) is marked
    the way Pydantic AI marks its own repairs (`outcome='interrupted'` and its
    synthesized-return metadata), with what turnlog knows (`risk`) beside it,
    so neither Pydantic AI nor its users mistake a repair for a return."""
    if message.origin in _REPAIRS:
        return pm.ToolReturnPart(
            tool_name=message.name or name,
            content=text,
            tool_call_id=str(message.call_id),
            outcome="interrupted",
            metadata={
                pm.SYNTHESIZED_TOOL_RETURN_METADATA_KEY: True,
                "turnlog": {"origin": message.origin, "risk": message.risk},
            },
        )
    return pm.ToolReturnPart(
        tool_name=message.name or name,
        content=text,
        tool_call_id=str(message.call_id),
        outcome="failed" if message.is_error else "success",
    )


def _shape(messages: list[Any]) -> list[tuple[str, tuple[str, ...]]]:
    """Pydantic AI messages as (role, call ids), one entry per part, as the log's
    transcript is compared (see `check_history`)."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for message in messages:
        if isinstance(message, pm.ModelResponse):
            ids = tuple(p.tool_call_id for p in message.parts if isinstance(p, pm.ToolCallPart))
            out.append(("assistant", ids))
            continue
        for part in message.parts:
            if isinstance(part, pm.SystemPromptPart):
                out.append(("system", ()))
            elif isinstance(part, pm.UserPromptPart):
                out.append(("user", ()))
            elif isinstance(part, (pm.ToolReturnPart, pm.RetryPromptPart)):
                out.append(("tool", (str(part.tool_call_id),)))
    return out


def to_model_messages(messages: list[Message] | tuple[Message, ...]) -> list[pm.ModelMessage]:
    """A turnlog transcript as Pydantic AI messages: user, system and tool
    entries become `ModelRequest` parts, assistant entries `ModelResponse`s."""
    out: list[pm.ModelMessage] = []
    request: list[Any] = []
    names: dict[str, str] = {}

    def flush() -> None:
        nonlocal request
        if request:
            out.append(pm.ModelRequest(parts=request))
            request = []

    for message in messages:
        text = display_text(message.content)
        if message.role == "system":
            request.append(pm.SystemPromptPart(content=text))
        elif message.role == "user":
            request.append(pm.UserPromptPart(content=text))
        elif message.role == "tool":
            call_id = str(message.call_id)
            request.append(_tool_return(message, names.get(call_id, "tool"), text))
        else:
            flush()
            parts: list[Any] = []
            content = (
                message.content
                if isinstance(message.content, list)
                else [{"type": "text", "text": message.content}]
            )
            for part in content:
                if part.get("type") == "thinking":
                    parts.append(
                        pm.ThinkingPart(
                            content=part.get("thinking", ""), signature=part.get("signature")
                        )
                    )
                elif part.get("type") == "text" and part.get("text"):
                    parts.append(pm.TextPart(content=part["text"]))
            for call in message.tool_calls:
                names[call.id] = call.name
                parts.append(
                    pm.ToolCallPart(tool_name=call.name, args=call.arguments, tool_call_id=call.id)
                )
            if parts:
                out.append(pm.ModelResponse(parts=parts))
    flush()
    return out


def _usage_of(response: Any) -> TokenUsage | None:
    """The response's token usage and model, as Pydantic AI reports them."""
    usage = getattr(response, "usage", None)
    found = TokenUsage(
        input_tokens=getattr(usage, "input_tokens", None) or None,
        output_tokens=getattr(usage, "output_tokens", None) or None,
        model=getattr(response, "model_name", None),
    )
    return found if found != TokenUsage() else None
