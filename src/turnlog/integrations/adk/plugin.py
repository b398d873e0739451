"""The ADK plugin: each tool call's dispatch written before the tool runs, its result after."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

from google.adk.plugins.base_plugin import BasePlugin
from google.adk.sessions.session import Session


class PluginHost(Protocol):
    """What the plugin asks of the session service it writes through
    (`TurnlogSessionService`); each call takes ADK's session as ADK hands it."""

    _plugged: bool

    def _offered(self, session: Session, agent_name: str, names: frozenset[str]) -> None: ...

    def _dispatch(
        self,
        session: Session,
        call_id: str,
        name: str,
        tool: Any,
        *,
        args: dict[str, Any] | None = None,
        pause: str | None = None,
        confirmed: bool | None = None,
    ) -> dict[str, Any] | None: ...

    def _result(
        self,
        session: Session,
        call_id: str,
        name: str,
        text: str,
        error: bool,
        *,
        args: dict[str, Any] | None = None,
        asked: bool = False,
    ) -> None: ...

    def _cut_off(self, session: Session, call_id: str, name: str, error: BaseException) -> None: ...

    def _run_failed(
        self, session: Session, error: BaseException, invocation: str | None
    ) -> None: ...


def result_text(result: Any) -> str:
    """A tool's result as the text turnlog records (ADK wraps a plain return
    value as `{"result": value}`)."""
    if isinstance(result, dict) and set(result) == {"result"}:
        result = result["result"]
    return result if isinstance(result, str) else json.dumps(result, default=str)


class TurnlogPlugin(BasePlugin):
    """Writes each call's dispatch before ADK runs the tool, and its result
    after it (`App(plugins=[sessions.plugin])`)."""

    def __init__(self, service: PluginHost) -> None:
        super().__init__(name="turnlog")
        self._service = service

    async def on_user_message_callback(self, *, invocation_context: Any, user_message: Any) -> None:
        self._service._plugged = True

    async def before_run_callback(self, *, invocation_context: Any) -> None:
        self._service._plugged = True

    def _foreign(self, context: Any) -> bool:
        """The callback is for a run on another session service (an
        `AgentTool`'s inner runner hands its plugins on to a session of its
        own): not one of this service's sessions, nothing to record."""
        invocation = getattr(context, "_invocation_context", None)
        service = getattr(invocation, "session_service", self._service)
        return service is not self._service

    async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
        if self._foreign(callback_context):
            return
        # What the model is offered: which of its tools delegate to a
        # task-mode sub-agent, so the reply's call to one is dispatched when
        # the reply is recorded (see `TurnlogSessionService._dispatch_delegations`).
        from google.adk.tools.agent_tool import AgentTool

        names = frozenset(
            name
            for name, tool in (getattr(llm_request, "tools_dict", None) or {}).items()
            if isinstance(tool, AgentTool) and _mode(getattr(tool, "agent", None)) == "task"
        )
        await asyncio.to_thread(
            self._service._offered, callback_context.session, callback_context.agent_name, names
        )

    async def before_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any
    ) -> dict[str, Any] | None:
        call_id = tool_context.function_call_id
        if call_id is None or self._foreign(tool_context):
            return None
        confirmation = getattr(tool_context, "tool_confirmation", None)
        pause = None
        if confirmation is None:
            # A call ADK's gate is about to hold for confirmation does not
            # run: it is paused once the gate has asked (`after_tool_callback`),
            # and a callback that answers it first answers it. A long-running
            # tool's call waits for its result from before its body starts
            # the operation (see `adk_pauses`).
            if await tool.check_require_confirmation(tool_args, tool_context) is True:
                pause = "gate"
            elif getattr(tool, "is_long_running", False):
                pause = "external"
        return await asyncio.to_thread(
            self._service._dispatch,
            tool_context.session,
            call_id,
            tool.name,
            tool,
            args=tool_args,
            pause=pause,
            confirmed=None if confirmation is None else bool(confirmation.confirmed),
        )

    async def after_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, result: Any
    ) -> None:
        call_id = tool_context.function_call_id
        if call_id is not None and not self._foreign(tool_context):
            requested = getattr(tool_context.actions, "requested_tool_confirmations", None) or {}
            await asyncio.to_thread(
                self._service._result,
                tool_context.session,
                call_id,
                tool.name,
                result_text(result),
                False,
                args=tool_args,
                asked=call_id in requested,
            )

    async def on_tool_error_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, error: Exception
    ) -> None:
        call_id = tool_context.function_call_id
        if call_id is None or self._foreign(tool_context):
            return
        if isinstance(error, asyncio.CancelledError):
            await asyncio.to_thread(
                self._service._cut_off, tool_context.session, call_id, tool.name, error
            )
        else:
            await asyncio.to_thread(
                self._service._result,
                tool_context.session,
                call_id,
                tool.name,
                f"{type(error).__name__}: {error}",
                True,
            )

    async def on_run_error_callback(self, *, invocation_context: Any, error: Exception) -> None:
        # The run raised: its turn is closed here, as the reference loop
        # closes one, so the next run on the session starts clean.
        if getattr(invocation_context, "session_service", self._service) is not self._service:
            return
        await asyncio.to_thread(
            self._service._run_failed,
            invocation_context.session,
            error,
            invocation_context.invocation_id,
        )


def _mode(agent: Any) -> str | None:
    """An agent's `mode` as its string value (`chat`, `task`, `single_turn`)."""
    mode = getattr(agent, "mode", None)
    return str(getattr(mode, "value", mode)) if mode is not None else None
