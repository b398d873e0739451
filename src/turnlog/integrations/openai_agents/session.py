"""turnlog under the OpenAI Agents SDK: a `Session` and `RunHooks` that write ahead.

    async with TurnlogSession("sessions", "support-42") as session:
        result = await Runner.run(agent, text, session=session, hooks=session.hooks)

The hooks write the model's reply (with its function calls) when the model
returns, a durable `tool_dispatch` before each tool body runs (for a handoff,
which the SDK runs with no `on_tool_start`, with the reply), and the
result when it ends; the SDK saves its items after the tools finish, and
items already recorded are not written twice. After a crash, `turnlog
recover` (or `turnlog.revive`) answers the owed calls, and `get_items`
hands the SDK the call with its synthetic output under the same id.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Coroutine, Generator, Mapping
from concurrent.futures import Future
from types import TracebackType
from typing import Any

from agents import RunHooks
from agents.items import ModelResponse
from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)

from turnlog import events as ev
from turnlog.core.pauses import awaiting_call
from turnlog.core.state import Message
from turnlog.errors import UsageError
from turnlog.events import ToolCall
from turnlog.handle.log import Log
from turnlog.handle.opening import prepare_opening
from turnlog.integrations.kit.answered import owed_here, recorded_answer, refuse_answered
from turnlog.integrations.kit.boundaries import begin_step, end_turn as end_turn
from turnlog.integrations.kit.handles import acquire, release, shared_state
from turnlog.integrations.kit.runs import fail_run, refuse_interrupted
from turnlog.integrations.kit.tool_calls import (
    AheadCall,
    check_idempotency_map,
    dispatch_ahead,
    tool_idempotency,
)
from turnlog.integrations.openai_agents.items import (
    CLEAR_EVENT,
    HIDE_EVENT,
    SessionView,
    plain_items,
    visible_items,
)
from turnlog.integrations.openai_agents.saving import (
    CALLS,
    DECIDED_IN,
    RunEndedUnseen,
    agent_ended,
    drop_undecided,
    save,
    tool_call,
)
from turnlog.runtime.async_loop import AsyncLog
from turnlog.stores import Store
from turnlog.text import foreign_text

# A program that imports this opens sessions: what the first open makes on
# the way is made here, once, not in the program's first turn.
prepare_opening()


def _data(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return dict(item)
    dumped: dict[str, Any] = item.model_dump(mode="json", exclude_none=True)
    return dumped


class TurnlogSession:
    """The Agents SDK's `Session` protocol on a turnlog session.

    Items are Responses-API dicts rendered from the log. `pop_item` and
    `clear_session` never delete events (the log is append-only): they append
    an event that hides items from `get_items`, and the hidden items stay in
    the log for `turnlog show` and audits.

    A handle with a lifetime: `async with TurnlogSession(...) as session:`,
    or `await session.close()`. Sessions on the same session id in one
    process (one per web request, say) share one writer. `recover=True` /
    `revive=True` repair a crashed session on open; without them a run on
    it is refused. `idempotency` maps tool names to `read_only`,
    `idempotent`, `destructive` or `unknown`.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | Store,
        session_id: str | None = None,
        *,
        idempotency: Mapping[str, str] | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        self._idempotency = check_idempotency_map(idempotency)
        # As the SDK's own sessions do: its runner reads the default `limit` here.
        # Typed as the SDK's `Session` protocol declares it (a settable member).
        self.session_settings: SessionSettings | None = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        log = acquire(target, session_id, **options)
        try:
            refuse_interrupted(log)
        except BaseException:
            release(log)
            raise
        self._closed = False
        self._closing: Future[None] | None = None
        self._log = AsyncLog(log, release=release)
        self.session_id = self._log.session_id
        self.hooks = TurnlogHooks(self)
        # What every live handle on this session must agree on: the items
        # pop_item and clear_session hid, and the response item ids the hooks
        # recorded (so the SDK's later add_items does not write them twice).
        self._shared = shared_state(log, "openai_agents", SessionView)

    @property
    def log(self) -> AsyncLog:
        if self._closed:
            raise UsageError(
                "the TurnlogSession is closed",
                hint="open a new TurnlogSession on the session (handles on one session "
                "share its writer)",
            )
        return self._log

    # -- the Session protocol ---------------------------------------------------------

    async def _messages(self) -> tuple[Message, ...]:
        """The transcript `visible_items` needs, the session's own events read."""
        if not self._shared.loaded:
            await self.log.call_read(self._shared.load, self.log.log)
        # What the handle holds is enough: a load that left the transcript
        # unread proved every older message is among the saved batches'.
        _, messages = await self.log.call_light(self.log.log.transcript_held)
        return messages

    async def _items(self) -> list[tuple[tuple[int, int], Any]]:
        return visible_items(await self._messages(), self._shared)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation as Responses input items, oldest first (the newest
        `limit`, or `session_settings.limit`, when given: 0 is none), synthetic
        results included."""
        items = plain_items(await self._messages(), self._shared)
        effective = resolve_session_limit(limit, self.session_settings)
        if effective is None:
            return items
        return items[-effective:] if effective > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        """Record what the SDK saves: the items as given (what `get_items`
        returns), and each as a transcript message unless the hooks recorded it."""
        if not self._shared.loaded:
            await self.log.call_read(self._shared.load, self.log.log)
        await self.log.call_light(save, self.log.log, self._shared, [_data(raw) for raw in items])

    async def pop_item(self) -> Any | None:
        """Hide the newest item and return it. Appends an event that hides it;
        the item itself stays in the log."""
        items = await self._items()
        if not items:
            return None
        (seq, index), item = items[-1]
        await self.log.append(ev.Custom(type=HIDE_EVENT, fields={"seq": seq, "index": index}))
        self._shared.hidden.add((seq, index))
        return item

    async def clear_session(self) -> None:
        """Hide every item so far. Appends an event; nothing is deleted."""
        through = self.log.log.next_seq - 1
        await self.log.append(ev.Custom(type=CLEAR_EVENT, fields={"through_seq": through}))
        self._shared.cleared_through = through

    async def fail_run(self, error: BaseException) -> None:
        """Close the turn a run left open when it raised (the SDK has no hook
        for a run's failure): a dispatched call unanswered reads outcome
        unknown, an undispatched one not started, and the turn ends `error`
        (`cancelled` for a cancellation). Leaving the `async with` block with
        the exception does the same. The next run then starts clean."""
        await self.log.call(fail_run, self.log.log, error)
        self._shared.run = None

    def hooks_with(self, *others: RunHooks[Any]) -> TurnlogHooks:
        """The run's one `hooks=` slot for turnlog and your own `RunHooks`:
        turnlog's hook runs first (its dispatch is durable before the tool
        body), then each of yours, in order."""
        return TurnlogHooks(self, *others)

    def close(self) -> Closing:
        """Release the session (the last handle in the process closes it).
        Idempotent. `await session.close()` waits for it; a plain
        `session.close()`, as `SQLiteSession.close()` is called, starts it."""
        if not self._closed:
            self._closed = True
            # The index of the session's own events, brought up to date on
            # the writer thread before the release: the next process to open
            # the session reads through it (`SessionView.reindex`).
            if self._shared.loaded:
                self._log.call_soon(self._shared.reindex, self._log.log)
            self._closing = self._log.start_close()
        return Closing(self._closing)

    async def __aenter__(self) -> TurnlogSession:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None and not self._closed:
            # A run raised inside the block: the turn it left open is closed
            # with what this process knows (the exception), not left for
            # recovery to call interrupted.
            fail_run(self._log.log, exc)
            self._shared.run = None
        await self.close()


_ANSWERED_HOW = (
    "the session's items hold the call with its recorded answer: run on the session with "
    'new input (`Runner.run(agent, "continue", session=session)`) and the model decides '
    "whether to ask for it again; a RunState saved before the answer would run it twice"
)


def _begin_step(log: Log, shared: SessionView, context: Any, agent: Any) -> None:
    """A model call of the run `context`. A turn another run left open (it
    ended unseen, and this run saved no input, which would have closed it) is
    closed first, as `_say` closes it, before anything of this run lands in it."""
    with log.lock:
        if log.turn_open and shared.run is not None and shared.run is not context:
            fail_run(log, RunEndedUnseen("the run ended without its final answer being saved"))
        if not log.turn_open or shared.run is None:
            # A new turn, or a paused one a RunState resumes: this run's.
            shared.run = context
        drop_undecided(log)
        _answer_handoffs(log, shared, agent)
        turn = log.open_turn
        # A call of the step before that the SDK answers only in its saved
        # items (an apply_patch edit): the step stays open until then.
        begin_step(log, open_step=turn is None or not turn.owed)


def _reply(
    log: Log,
    shared: SessionView,
    parts: list[Any],
    calls: list[ToolCall],
    ahead: list[AheadCall],
    item_ids: list[str],
) -> None:
    """The model's reply, then the dispatch of each call the SDK runs itself
    (see `_run_by_the_sdk`), durable before the SDK can run any of them."""
    with log.lock:
        seq = log.assistant(parts, calls).seq
        for item_id in item_ids:
            shared.seq_of[f"item:{item_id}"] = seq
        for call in calls:
            shared.seq_of[f"call:{call.id}"] = seq
        shared.ahead.update(dispatch_ahead(log, ahead))


def _dispatch_tool(log: Log, shared: SessionView, dispatch: ev.ToolDispatch) -> None:
    """A tool's dispatch, unless `on_llm_end` dispatched the call ahead (one
    it took for a call the SDK runs itself): one dispatch per call. A call
    the open turn never asked for (a shell or computer action, which the log
    keeps as an item, not a call) is not dispatched: the log claims nothing
    about it."""
    with log.lock:
        if not owed_here(log, dispatch.call_id):
            return
        _act_on_approval(log, dispatch.call_id)
        turn = log.open_turn
        if (
            dispatch.call_id in shared.ahead
            and turn is not None
            and any(
                call.call_id == dispatch.call_id and call.dispatch is not None and not call.answered
                for call in turn.calls
            )
        ):
            return
        log.append(dispatch, sync=True)


def _act_on_approval(log: Log, call_id: str) -> None:
    """A call the log holds paused is starting: the SDK runs a call it
    stopped on only once its `RunState` approved it, so the approval is
    recorded (synced) before the dispatch, in a step of the resumed turn."""
    waiting = awaiting_call(log.awaiting, call_id)
    if waiting is None:
        return
    if waiting.decision is None:
        log.approve(call_id, reason="approved on the Agents SDK's RunState", keeper=DECIDED_IN)
    begin_step(log, open_step=False)


def _tool_ended(log: Log, shared: SessionView, result: ev.ToolResult) -> None:
    """A tool's result, for a call the open turn dispatched (see `_dispatch_tool`)."""
    with log.lock:
        turn = log.open_turn
        if turn is None or not any(
            call.call_id == result.call_id and call.dispatch is not None and not call.answered
            for call in turn.calls
        ):
            return
        shared.seq_of[f"output:{result.call_id}"] = log.append(result).seq


def _run_by_the_sdk(agent: Any, items: list[dict[str, Any]]) -> dict[str, str]:
    """The call ids of a reply's function calls that the SDK runs with no
    `on_tool_start` naming their call id before it.

    A handoff: the SDK runs the handoff's `on_handoff` callback (user code,
    with side effects of its own) and its input filter, then starts the next
    agent; `RunHooks.on_handoff` fires only after the callback, and no hook
    fires before it but `on_llm_end`. Only the first handoff of a reply runs;
    the SDK answers the others "Multiple handoffs detected, ignoring this
    one." without running them, so they are not dispatched. And a function
    call an `ApplyPatchTool` answers (a model without the hosted
    `apply_patch_call` asks for it as a function): the SDK runs the editor,
    and its `on_tool_start` carries no call id.

    Read from the agent the way the SDK reads it: a namespaced call is never
    a handoff, and a function tool of that name comes before apply_patch. A
    disabled handoff named anyway is dispatched too (the SDK then fails the
    run, and the call reads "may have run": pessimistic, never wrong)."""
    from agents import Agent
    from agents.handoffs import Handoff
    from agents.tool import ApplyPatchTool, FunctionTool

    handoffs = {
        item.tool_name if isinstance(item, Handoff) else Handoff.default_tool_name(item)
        for item in getattr(agent, "handoffs", None) or ()
        if isinstance(item, (Handoff, Agent))
    }
    tools = list(getattr(agent, "tools", None) or ())
    functions = {tool.name for tool in tools if isinstance(tool, FunctionTool)}
    patch = next((tool for tool in tools if isinstance(tool, ApplyPatchTool)), None)
    out: dict[str, str] = {}
    handed_off = False
    for item in items:
        name, namespace = str(item.get("name") or ""), item.get("namespace")
        bare = not (isinstance(namespace, str) and namespace)
        if bare and name in handoffs:
            out[str(item.get("call_id"))] = IGNORED_HANDOFF if handed_off else HANDOFF
            handed_off = True
        elif patch is not None and name not in functions and _names_apply_patch(name, patch.name):
            out[str(item.get("call_id"))] = "apply_patch"
    return out


HANDOFF, IGNORED_HANDOFF = "handoff", "ignored_handoff"
# What the SDK answers a handoff it ignores (only a reply's first one runs).
_IGNORED_HANDOFF_TEXT = "Multiple handoffs detected, ignoring this one."


def _answer_handoffs(log: Log, shared: SessionView, agent: Any) -> None:
    """Answer the handoffs of the step before, as the SDK answers them, when
    the agent handed to makes its first model call: the SDK saves its answers
    with the run's items later, and a step's calls are answered before the
    next step starts (the saved answer then finds the call answered)."""
    turn = log.open_turn
    if turn is None or not shared.handoffs:
        return
    for call in turn.calls:
        kind = shared.handoffs.get(call.call_id)
        if kind is None or call.answered or not call.requested:
            continue
        text = (
            json.dumps({"assistant": getattr(agent, "name", None)})
            if kind == HANDOFF
            else _IGNORED_HANDOFF_TEXT
        )
        answer = ev.ToolResult(call_id=call.call_id, name=call.name, content=text)
        seq = log.append(answer, allow_undispatched=kind == IGNORED_HANDOFF).seq
        shared.seq_of[f"output:{call.call_id}"] = seq
        del shared.handoffs[call.call_id]


def _names_apply_patch(name: str, tool_name: str) -> bool:
    """The SDK's own test for a function call its apply_patch tool answers."""
    candidate = name.strip().lower()
    return candidate.startswith("apply_patch") or candidate == tool_name.strip().lower()


class Closing(Coroutine[Any, Any, None]):
    """What `TurnlogSession.close` returns: the close is under way already;
    await it (or `asyncio.run` it) to wait for it, or drop it, as a plain
    `session.close()` does, with no warning of a coroutine never awaited."""

    def __init__(self, closing: Future[None] | None) -> None:
        self._closing = closing
        self._waiting: Generator[Any, None, None] | None = None

    async def _wait(self) -> None:
        if self._closing is not None:
            await asyncio.shield(asyncio.wrap_future(self._closing))

    def _steps(self) -> Generator[Any, None, None]:
        if self._waiting is None:
            self._waiting = self._wait().__await__()
        return self._waiting

    def __await__(self) -> Generator[Any, None, None]:
        return self._steps()

    def send(self, value: Any) -> Any:
        return self._steps().send(value)

    def throw(self, *args: Any) -> Any:
        return self._steps().throw(*args)

    def close(self) -> None:
        if self._waiting is not None:
            self._waiting.close()


class TurnlogHooks(RunHooks[Any]):
    """Writes ahead of the SDK: the reply when the model returns, a durable
    dispatch before each tool body, the result after it. Hooks passed after
    the session (`session.hooks_with(mine)`) run after turnlog's, in order."""

    def __init__(self, session: TurnlogSession, *others: RunHooks[Any]) -> None:
        self._session = session
        self._others = others

    @property
    def _log(self) -> AsyncLog:
        return self._session.log

    async def on_llm_start(
        self, context: Any, agent: Any, system_prompt: Any, input_items: Any
    ) -> None:
        await self._log.call_light(
            _begin_step, self._log.log, self._session._shared, context, agent
        )
        for other in self._others:
            await other.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: ModelResponse) -> None:
        parts: list[Any] = []
        calls: list[ToolCall] = []
        asked: list[dict[str, Any]] = []
        item_ids: list[str] = []
        for raw in response.output:
            item = _data(raw)
            if isinstance(item.get("id"), str):
                item_ids.append(item["id"])
            kind = item.get("type")
            if kind in CALLS:
                calls.append(tool_call(item))
                asked.append(item)
            elif kind == "reasoning":
                parts.append(item)
            elif kind == "message":
                parts.append(
                    {
                        "type": "text",
                        "text": foreign_text(
                            [c for c in item.get("content", []) if isinstance(c, dict)]
                        ),
                    }
                )
        run_by_the_sdk = _run_by_the_sdk(agent, asked)
        self._session._shared.handoffs.update(
            (call_id, kind)
            for call_id, kind in run_by_the_sdk.items()
            if kind in (HANDOFF, IGNORED_HANDOFF)
        )
        ahead = [
            AheadCall(
                call_id=call.id,
                name=call.name,
                idempotency=tool_idempotency(call.name, self._session._idempotency),
            )
            for call in calls
            if run_by_the_sdk.get(call.id) in (HANDOFF, "apply_patch")
        ]
        shared = self._session._shared
        await self._log.call_light(_reply, self._log.log, shared, parts, calls, ahead, item_ids)
        for other in self._others:
            await other.on_llm_end(context, agent, response)

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        for other in self._others:
            await other.on_agent_start(context, agent)

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        # The SDK calls this hook by keyword, and hooks of its users (and its
        # own tests) read the keywords, so they are passed on the same way.
        for other in self._others:
            await other.on_handoff(context=context, from_agent=from_agent, to_agent=to_agent)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        call_id = getattr(context, "tool_call_id", None)
        if call_id is not None:
            await self._refuse_answered(call_id)
            name = getattr(tool, "name", None)
            idempotency = tool_idempotency(
                name, self._session._idempotency, getattr(tool, "metadata", None)
            )
            # Durable before the SDK runs the tool body: recovery's "not
            # started" rests on it.
            dispatch = ev.ToolDispatch(call_id=call_id, name=name, idempotency=idempotency)
            shared = self._session._shared
            await self._log.call_light(_dispatch_tool, self._log.log, shared, dispatch)
        for other in self._others:
            await other.on_tool_start(context, agent, tool)

    async def _refuse_answered(self, call_id: str) -> None:
        """The SDK runs the calls a `RunState` holds when it resumes from it,
        also one the log has answered since (recovery after a crash, a sweep):
        the SDK has no way to be handed an answer in its place, so the run is
        refused before anything is written, and the tool does not run."""
        log = self._log
        if await log.call_light(owed_here, log.log, call_id):
            return
        answer = await log.call(recorded_answer, log.log, call_id)
        if answer is not None:
            refuse_answered(log.log, answer, how=_ANSWERED_HOW)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: object) -> None:
        call_id = getattr(context, "tool_call_id", None)
        if call_id is not None:
            name = getattr(tool, "name", None)
            answer = ev.ToolResult(call_id=call_id, name=name, content=str(result))
            shared = self._session._shared
            await self._log.call_light(_tool_ended, self._log.log, shared, answer)
        for other in self._others:
            await other.on_tool_end(context, agent, tool, result)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        if await self._log.call_light(agent_ended, self._log.log, self._session._shared):
            self._session._shared.run = None
        for other in self._others:
            await other.on_agent_end(context, agent, output)
