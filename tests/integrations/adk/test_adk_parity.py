"""TurnlogSessionService against ADK's InMemorySessionService, side by side: the same calls, the same answers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError as AdkNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session
from google.genai import types

import turnlog
from turnlog.errors import SessionNotFoundError, TurnlogError
from turnlog.integrations.adk import (
    AdkSessionExistsError,
    AdkSessionNotFoundError,
    TurnlogSessionService,
    scoped_session_id,
)
from turnlog.stores.base import parent_session_id

Scenario = Callable[[BaseSessionService], Awaitable[Any]]


@pytest.fixture(params=["jsonl", "sqlite"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path / "sessions") if request.param == "jsonl" else f"sqlite:///{tmp_path}/s.db"


def side_by_side(target: str, scenario: Scenario) -> tuple[Any, Any]:
    """What `scenario` returns on ADK's in-memory service and on ours."""

    async def main() -> tuple[Any, Any]:
        reference = await scenario(InMemorySessionService())
        async with TurnlogSessionService(target) as sessions:
            ours = await scenario(sessions)
        return reference, ours

    return asyncio.run(main())


def said(text: str, **delta: Any) -> Event:
    """A user event with text and a state delta, stamped now."""
    return Event(
        author="user",
        invocation_id=f"inv-{text}",
        content=types.Content(role="user", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=dict(delta)),
    )


def shape(session: Session | None) -> Any:
    """A session as the two services can agree on it: everything but the
    times (each service stamps its own), with the events as ADK dumps them."""
    if session is None:
        return None
    events = [e.model_dump(mode="json", exclude={"id", "timestamp"}) for e in session.events]
    return (session.id, session.app_name, session.user_id, dict(session.state), events)


# -- timestamps (issue item 7) ----------------------------------------------------------


def test_a_session_reads_back_last_updated_as_created_and_as_its_last_event(target: str) -> None:
    """`get_session` of a session with no events reports the time
    `create_session` returned, and `append_event` moves the caller's
    session to its event's time, which `get_session` then reports."""

    async def scenario(service: BaseSessionService) -> list[bool]:
        made = await service.create_session(app_name="shop", user_id="u", session_id="s")
        created = made.last_update_time
        empty = await service.get_session(app_name="shop", user_id="u", session_id="s")
        assert empty is not None
        event = Event(author="user", invocation_id="i", timestamp=created + 10)
        await service.append_event(made, event)
        again = await service.get_session(app_name="shop", user_id="u", session_id="s")
        assert again is not None
        return [
            empty.last_update_time == created,
            0 < created <= time.time(),
            made.last_update_time == event.timestamp,
            again.last_update_time == event.timestamp,
        ]

    reference, ours = side_by_side(target, scenario)
    assert reference == ours == [True, True, True, True]


# -- list_sessions (issue item 8) -------------------------------------------------------


def test_list_sessions_merges_state_drops_events_and_orders_by_last_update(target: str) -> None:
    """Each listed session carries its state merged with the app's and its
    user's keys, no events, and its last update; the least recently updated
    comes first, so the last is the most recently active one."""

    async def scenario(service: BaseSessionService) -> Any:
        for session_id in ("first", "second", "third"):
            await service.create_session(
                app_name="shop", user_id="u", session_id=session_id, state={"n": session_id}
            )
        await service.create_session(app_name="shop", user_id="v", session_id="theirs")
        first = await service.get_session(app_name="shop", user_id="u", session_id="first")
        assert first is not None
        await service.append_event(first, said("again", **{"app:open": True, "user:vip": 1}))
        mine = (await service.list_sessions(app_name="shop", user_id="u")).sessions
        everyone = (await service.list_sessions(app_name="shop")).sessions
        times = [s.last_update_time for s in everyone]
        return (
            [(s.id, s.state, s.events) for s in mine],
            [(s.id, s.user_id) for s in everyone],
            times == sorted(times),
            mine[-1].last_update_time == first.last_update_time,
        )

    reference, ours = side_by_side(target, scenario)
    assert reference == ours
    listed, everyone, ordered, last_is_latest = ours
    assert [session_id for session_id, _, _ in listed] == ["second", "third", "first"]
    assert listed[0][1] == {"n": "second", "app:open": True, "user:vip": 1}
    assert all(events == [] for _, _, events in listed)
    assert everyone[-1] == ("first", "u") and ("theirs", "v") in everyone
    assert ordered and last_is_latest


# -- shared state (issue item 9) --------------------------------------------------------


def test_app_and_user_keys_are_shared_from_create_on_and_user_state_reads_them(
    target: str,
) -> None:
    """`create_session` merges the app's keys and the user's into the new
    session (and drops `temp:` keys); `get_user_state` gives the user's keys
    without their prefix, never another user's or another app's."""

    async def scenario(service: BaseSessionService) -> Any:
        state = {"app:plan": "pro", "user:name": "Ada", "temp:draft": 1, "own": 2}
        first = await service.create_session(
            app_name="shop", user_id="u", session_id="a", state=state
        )
        await service.append_event(first, said("hi", **{"user:name": "Ada L.", "app:n": 1}))
        second = await service.create_session(app_name="shop", user_id="u", session_id="b")
        stranger = await service.create_session(app_name="shop", user_id="v", session_id="c")
        elsewhere = await service.create_session(app_name="bank", user_id="u", session_id="d")
        return (
            first.state,
            second.state,
            stranger.state,
            elsewhere.state,
            await service.get_user_state(app_name="shop", user_id="u"),
            await service.get_user_state(app_name="shop", user_id="v"),
            await service.get_user_state(app_name="bank", user_id="u"),
        )

    reference, ours = side_by_side(target, scenario)
    assert reference == ours
    assert ours[1] == {"app:plan": "pro", "app:n": 1, "user:name": "Ada L."}
    assert ours[2] == {"app:plan": "pro", "app:n": 1}
    assert ours[3] == {}
    assert ours[4:] == ({"name": "Ada L."}, {}, {})


def test_shared_state_survives_the_process(target: str) -> None:
    """Shared keys are read from the log, not kept in memory: a fresh service
    on the same store merges them too."""

    async def main() -> tuple[Session, dict[str, Any]]:
        async with TurnlogSessionService(target) as sessions:
            made = await sessions.create_session(app_name="shop", user_id="u", session_id="a")
            await sessions.append_event(made, said("hi", **{"user:lang": "fr", "app:v": 2}))
        async with TurnlogSessionService(target) as sessions:
            fresh = await sessions.create_session(app_name="shop", user_id="u", session_id="b")
            return fresh, await sessions.get_user_state(app_name="shop", user_id="u")

    fresh, user_state = asyncio.run(main())
    assert fresh.state == {"user:lang": "fr", "app:v": 2}
    assert user_state == {"lang": "fr"}


# -- ids scoped by app and user (issue item 10) -----------------------------------------


def test_two_users_each_have_a_session_under_the_same_id(target: str) -> None:
    """ADK scopes a session id by app and user: a second user, or a second
    app, may use an id another has; each reads back only its own."""

    async def scenario(service: BaseSessionService) -> Any:
        mine = await service.create_session(app_name="shop", user_id="u1", session_id="s1")
        await service.append_event(mine, said("mine"))
        theirs = await service.create_session(app_name="shop", user_id="u2", session_id="s1")
        other_app = await service.create_session(app_name="bank", user_id="u1", session_id="s1")
        got = [
            await service.get_session(app_name=app, user_id=user, session_id="s1")
            for app, user in (("shop", "u1"), ("shop", "u2"), ("bank", "u1"))
        ]
        await service.delete_session(app_name="shop", user_id="u2", session_id="s1")
        # A user who has no session under the id deletes nothing, not u1's.
        await service.delete_session(app_name="shop", user_id="intruder", session_id="s1")
        still = await service.get_session(app_name="shop", user_id="u1", session_id="s1")
        return [shape(theirs), shape(other_app), *map(shape, got), shape(still)]

    reference, ours = side_by_side(target, scenario)
    assert reference == ours
    assert [len(s[4]) for s in ours] == [0, 0, 1, 0, 0, 1]  # u1's event stays u1's


def test_the_first_session_keeps_its_adk_id_and_the_others_are_scoped(target: str) -> None:
    """The turnlog id is the ADK id when that is free (so `turnlog recover
    s1` finds it), and the documented scoped id otherwise; the scoped id is
    pinned here, as sessions already stored depend on it."""

    async def main() -> list[str | None]:
        async with TurnlogSessionService(target) as sessions:
            for user in ("u1", "u2"):
                await sessions.create_session(app_name="shop", user_id=user, session_id="s1")
            return [
                await sessions.turnlog_session_id(app_name="shop", user_id=user, session_id="s1")
                for user in ("u1", "u2", "u3")
            ]

    assert scoped_session_id("shop", "u2", "s1") == "s1-022859bda8684df3e4f1"
    assert asyncio.run(main()) == ["s1", "s1-022859bda8684df3e4f1", None]
    assert sorted(turnlog.open_store(target)[0].sessions()) == ["s1", "s1-022859bda8684df3e4f1"]


def test_an_adk_id_shaped_like_a_subagent_id_is_never_filed_in_another_session_tree(
    target: str,
) -> None:
    """Turnlog files a subagent's session as `<parent>.agents/<child>`: an
    ADK id of that shape is stored under a scoped root id, so it reads as
    its own session and the victim's tree stays the victim's."""

    async def main() -> tuple[Session | None, Session | None, str | None]:
        async with TurnlogSessionService(target) as sessions:
            victim = await sessions.create_session(
                app_name="shop", user_id="v", session_id="victim"
            )
            await sessions.append_event(victim, said("private"))
            evil = await sessions.create_session(
                app_name="shop", user_id="e", session_id="victim.agents/evil"
            )
            await sessions.append_event(evil, said("planted"))
            where = await sessions.turnlog_session_id(
                app_name="shop", user_id="e", session_id="victim.agents/evil"
            )
            got_evil = await sessions.get_session(
                app_name="shop", user_id="e", session_id="victim.agents/evil"
            )
            got_victim = await sessions.get_session(
                app_name="shop", user_id="v", session_id="victim"
            )
            return got_evil, got_victim, where

    got_evil, got_victim, where = asyncio.run(main())
    assert where is not None and "/" not in where and parent_session_id(where) is None
    store = turnlog.open_store(target)[0]
    assert store.children("victim") == []
    assert sorted(store.sessions()) == sorted(["victim", where])
    assert got_evil is not None and got_evil.id == "victim.agents/evil"
    assert [e.content.parts[0].text for e in got_evil.events if e.content] == ["planted"]
    assert got_victim is not None
    assert [e.content.parts[0].text for e in got_victim.events if e.content] == ["private"]


def test_any_adk_id_is_stored_under_a_valid_root_id(target: str) -> None:
    """ADK takes any string as a session id: one turnlog could not use as
    it is (a path, a dot first, spaces, accents, a lone surrogate, 300
    characters, `.agents` last) is stored under its scoped root id, and
    reads back under the ADK id as in ADK's own service. A lone surrogate
    is refused, as turnlog refuses one in any text, and leaves nothing."""
    odd = ["../up", ".hidden", "a b", "café", "long" * 75, "p.agents", "a/b/c"]

    async def scenario(service: BaseSessionService) -> Any:
        for session_id in odd:
            made = await service.create_session(app_name="shop", user_id="u", session_id=session_id)
            await service.append_event(made, said(session_id))
        got = [
            await service.get_session(app_name="shop", user_id="u", session_id=session_id)
            for session_id in odd
        ]
        return [shape(session) for session in got]

    reference, ours = side_by_side(target, scenario)
    assert reference == ours and [s[0] for s in ours] == odd
    stored = turnlog.open_store(target)[0].sessions()
    assert len(stored) == len(odd)
    assert all("/" not in turnlog_id and len(turnlog_id) <= 128 for turnlog_id in stored)

    async def unencodable() -> None:
        async with TurnlogSessionService(target) as sessions:
            await sessions.create_session(app_name="shop", user_id="u", session_id="x\ud800")

    with pytest.raises(TurnlogError) as refused:
        asyncio.run(unencodable())
    assert refused.value.hint
    assert turnlog.open_store(target)[0].sessions() == stored


def test_a_session_stored_before_ids_were_scoped_still_reads_and_writes(target: str) -> None:
    """A session written by an earlier release (turnlog id = ADK id, no ADK
    id in its header) is found, read and appended to as before; it does not
    answer for another user."""
    meta = {"adk": {"app_name": "shop", "user_id": "u", "state": {"tier": "gold"}}}
    turnlog.open(target, "old-1", create=True, meta=meta).close()

    async def main() -> tuple[Session | None, Session | None, list[str]]:
        async with TurnlogSessionService(target) as sessions:
            old = await sessions.get_session(app_name="shop", user_id="u", session_id="old-1")
            assert old is not None
            await sessions.append_event(old, said("still here", seen=True))
            stranger = await sessions.get_session(app_name="shop", user_id="x", session_id="old-1")
            listed = await sessions.list_sessions(app_name="shop", user_id="u")
        async with TurnlogSessionService(target) as sessions:
            again = await sessions.get_session(app_name="shop", user_id="u", session_id="old-1")
        return again, stranger, [s.id for s in listed.sessions]

    again, stranger, listed = asyncio.run(main())
    assert again is not None and again.state == {"tier": "gold", "seen": True}
    assert stranger is None
    assert listed == ["old-1"]


def test_an_adk_id_taken_by_a_session_of_another_kind_is_scoped_not_refused(target: str) -> None:
    """A store shared with other integrations may hold a non-ADK session
    under the id ADK asks for: the ADK session gets its scoped id, and the
    other session is left as it was."""
    turnlog.open(target, "run-1", create=True).close()

    async def main() -> str | None:
        async with TurnlogSessionService(target) as sessions:
            await sessions.create_session(app_name="shop", user_id="u", session_id="run-1")
            return await sessions.turnlog_session_id(
                app_name="shop", user_id="u", session_id="run-1"
            )

    assert asyncio.run(main()) == scoped_session_id("shop", "u", "run-1")
    assert len(turnlog.open_store(target)[0].read("run-1")) == 1  # its header only


# -- every method, side by side (issue item 11) -----------------------------------------


def test_every_method_answers_as_the_in_memory_service(target: str) -> None:
    """Each BaseSessionService method on the same calls: the sessions, the
    events kept and filtered, the errors and their types, delete and create
    again."""

    async def scenario(service: BaseSessionService) -> list[Any]:
        out: list[Any] = []
        made = await service.create_session(
            app_name="shop", user_id="u", session_id=" s ", state={"k": 1, "temp:t": 0}
        )
        out.append(shape(made))  # the id stripped, `temp:` dropped
        for stamp in (1.0, 2.0, 3.0, 4.0, 5.0):
            event = said(f"e{stamp}", step=stamp)
            event.timestamp = stamp
            await service.append_event(made, event)
        await service.append_event(made, Event(author="user", partial=True))
        out.append(shape(made))
        for config in (
            None,
            GetSessionConfig(num_recent_events=0),
            GetSessionConfig(num_recent_events=2),
            GetSessionConfig(after_timestamp=4.0),
            GetSessionConfig(after_timestamp=99.0),
            GetSessionConfig(num_recent_events=3, after_timestamp=4.5),
        ):
            got = await service.get_session(
                app_name="shop", user_id="u", session_id="s", config=config
            )
            out.append(shape(got))
        with pytest.raises(AlreadyExistsError):
            await service.create_session(app_name="shop", user_id="u", session_id="s")
        out.append(await service.get_session(app_name="shop", user_id="x", session_id="s"))
        out.append(await service.delete_session(app_name="shop", user_id="u", session_id="nope"))
        await service.delete_session(app_name="shop", user_id="u", session_id="s")
        out.append(await service.get_session(app_name="shop", user_id="u", session_id="s"))
        out.append((await service.list_sessions(app_name="shop")).sessions)
        with pytest.raises(ValueError) as refused:
            await service.append_event(made, said("late"))
        out.append(isinstance(refused.value, AdkNotFoundError))
        again = await service.create_session(app_name="shop", user_id="u", session_id="s")
        out.append(shape(again))
        out.append(shape(await service.get_session(app_name="shop", user_id="u", session_id="s")))
        generated = await service.create_session(app_name="shop", user_id="u")
        out.append(bool(generated.id) and generated.id != "s")
        return out

    reference, ours = side_by_side(target, scenario)
    assert reference == ours
    assert ours[0][3] == {"k": 1}
    assert [len(s[4]) for s in ours[2:8]] == [5, 0, 2, 2, 0, 1]
    assert ours[-3] == ("s", "shop", "u", {}, [])  # created again after the delete, empty


def test_our_errors_are_adk_errors_and_turnlog_errors_with_a_hint(target: str) -> None:
    """Code written for ADK's services catches ours unchanged; each also is a
    `TurnlogError` that says what to do."""

    async def main() -> tuple[BaseException, BaseException]:
        async with TurnlogSessionService(target) as sessions:
            made = await sessions.create_session(app_name="shop", user_id="u", session_id="s")
            try:
                await sessions.create_session(app_name="shop", user_id="u", session_id="s")
            except AlreadyExistsError as error:
                exists: BaseException = error
            stray = Session(id="none", app_name="shop", user_id="u")
            try:
                await sessions.append_event(stray, said("hi"))
            except ValueError as error:
                missing: BaseException = error
            assert made.id == "s"
            return exists, missing

    exists, missing = asyncio.run(main())
    assert isinstance(exists, AdkSessionExistsError) and isinstance(exists, TurnlogError)
    assert isinstance(missing, AdkSessionNotFoundError)
    assert isinstance(missing, SessionNotFoundError)
    assert "already exists" in str(exists) and "not found" in str(missing)
    assert exists.hint and missing.hint and "create_session" in missing.hint


# -- a Runner on both ------------------------------------------------------------------


def test_a_runner_leaves_the_same_session_on_both_services(target: str) -> None:
    """ADK's Runner with a scripted model, a tool and state written by the
    agent (`output_key`) and the tool (`tool_context.state`): the session it
    leaves, events and state, is the same on both."""
    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.tools.tool_context import ToolContext

    class Scripted(BaseLlm):
        """Asks for the weather until it sees the answer, then answers."""

        model: str = "scripted"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            parts = [p for c in llm_request.contents for p in (c.parts or [])]
            asked = sum(1 for p in parts if p.text and p.text.startswith("weather"))
            answered = sum(1 for p in parts if p.function_response)
            if answered < asked:
                call = types.FunctionCall(id=f"c{asked}", name="weather", args={"city": "Oslo"})
                reply = types.Part(function_call=call)
            else:
                reply = types.Part(text=f"cold, {answered} times")
            yield LlmResponse(content=types.Content(role="model", parts=[reply]))

    def weather(city: str, tool_context: ToolContext) -> str:
        """The weather in a city."""
        tool_context.state["user:last_city"] = city
        tool_context.state["temp:scratch"] = "gone"
        return f"{city}: -3C"

    async def drive(service: BaseSessionService, plugins: list[Any]) -> Any:
        agent = LlmAgent(name="a", model=Scripted(), tools=[weather], output_key="reply")
        runner = Runner(
            app=App(name="app", root_agent=agent, plugins=plugins), session_service=service
        )
        await service.create_session(app_name="app", user_id="u", session_id="s")
        for text in ("weather?", "weather again?"):
            message = types.Content(role="user", parts=[types.Part(text=text)])
            async for _ in runner.run_async(user_id="u", session_id="s", new_message=message):
                pass
        session = await service.get_session(app_name="app", user_id="u", session_id="s")
        assert session is not None
        events = [
            (
                e.author,
                [
                    p.model_dump(mode="json", exclude_none=True, exclude={"thought_signature"})
                    for p in (e.content.parts or [])
                ]
                if e.content
                else [],
                dict(e.actions.state_delta),
            )
            for e in session.events
        ]
        times = [e.timestamp for e in session.events]
        listed = (await service.list_sessions(app_name="app", user_id="u")).sessions
        return (
            events,
            session.state,
            times == sorted(times),
            session.last_update_time == times[-1] == listed[0].last_update_time,
            await service.get_user_state(app_name="app", user_id="u"),
        )

    async def main() -> tuple[Any, Any]:
        reference = await drive(InMemorySessionService(), [])
        async with TurnlogSessionService(target) as sessions:
            ours = await drive(sessions, [sessions.plugin])
        return reference, ours

    reference, ours = asyncio.run(main())
    assert reference == ours
    events, state, ordered, stamped, user_state = ours
    assert [author for author, _, _ in events] == ["user", "a", "a", "a"] * 2
    assert state == {"reply": "cold, 2 times", "user:last_city": "Oslo"}
    assert ordered and stamped and user_state == {"last_city": "Oslo"}
    assert turnlog.inspect(target, "s").status == "finished"
