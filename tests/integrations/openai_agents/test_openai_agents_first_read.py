"""A TurnlogSession's first read after opening (a skim of the log, through the index
beside it when there is one) hands the SDK exactly what the careful read of the whole
log gives, whatever was written before: runs with and without the hooks, pops, clears,
a recovered crash, a session written by turnlog's own API."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from builders import crashed_turn
from turnlog.stores import JSONLStore, SQLiteStore, Store

pytest.importorskip("agents")

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from turnlog.integrations.openai_agents import TurnlogSession
from turnlog.integrations.openai_agents.items import SessionView, plain_items, visible_items

set_tracing_disabled(True)

OPS = st.lists(
    st.sampled_from(["run", "run_hooks", "text", "pop", "clear", "reopen"]), min_size=1, max_size=7
)


def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


def agent_for(number: int, *, tool: bool) -> Agent[Any]:
    script: list[Any] = []
    if tool:
        script.append([function_call("lookup", {"q": str(number)}, call_id=f"c{number}")])
    script.append([assistant_message(f"answer {number}")])
    return Agent(
        name="w",
        model=ScriptedModel(script),
        tools=[function_tool(lookup, name_override="lookup")],
    )


def careful_items(session: TurnlogSession) -> list[Any]:
    """What the read of the whole log gives (the path before skims)."""
    log = session.log.log
    view = SessionView()
    if not log.read_transcript(observe=view.see):
        for event in log.store.iter_events(log.session_id):
            view.see(event)
    return [item for _, item in visible_items(log.messages, view)]


async def first_read_and_careful(store: Store) -> tuple[list[Any], list[Any], list[Any]]:
    """(get_items of a fresh handle, the careful read, plain_items of the same)."""
    fast, careful, plain, _ = await first_read_compared(store)
    return fast, careful, plain


async def first_read_compared(store: Store) -> tuple[list[Any], list[Any], list[Any], bool]:
    """As `first_read_and_careful`, and whether the first read left the
    transcript unread (the skim, not the careful read, answered)."""
    async with TurnlogSession(store, "s") as session:
        fast = await session.get_items()
        skimmed = not session.log.log.transcript_read
        careful = careful_items(session)
        _, messages = session.log.log.transcript_held()
        plain = plain_items(messages, session._shared)
    return fast, careful, plain, skimmed


def store_of(kind: str, tmp_path: Path) -> Store:
    return JSONLStore(tmp_path) if kind == "jsonl" else SQLiteStore(tmp_path / "s.db")


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=OPS)
def test_the_first_read_is_the_careful_read(
    tmp_path_factory: pytest.TempPathFactory, kind: str, ops: list[str]
) -> None:
    store = store_of(kind, tmp_path_factory.mktemp("first-read"))

    async def main() -> None:
        session = TurnlogSession(store, "s")
        try:
            for number, op in enumerate(ops):
                if op in ("run", "run_hooks", "text"):
                    agent = agent_for(number, tool=op != "text")
                    hooks = session.hooks if op == "run_hooks" else None
                    await Runner.run(agent, f"question {number}", session=session, hooks=hooks)
                elif op == "pop":
                    await session.pop_item()
                elif op == "clear":
                    await session.clear_session()
                else:
                    before = await session.get_items()
                    await session.close()
                    session = TurnlogSession(store, "s")
                    assert await session.get_items() == before
            before = await session.get_items()
        finally:
            await session.close()
        fast, careful, plain, skimmed = await first_read_compared(store)
        assert fast == careful == plain == before
        # Every message here is among the saved batches: the skim answered.
        assert skimmed

    asyncio.run(main())


def test_a_recovered_crash_in_the_head_is_read_the_careful_way(tmp_path: Path) -> None:
    # Recovery's answers are messages no saved batch covers: a session whose
    # older part holds them is read whole, and the SDK sees those answers.
    store = JSONLStore(tmp_path)
    crashed_turn(store, "s")

    async def main() -> None:
        for number in range(3):
            async with TurnlogSession(store, "s") as session:
                await Runner.run(agent_for(number, tool=True), f"q{number}", session=session)
        fast, careful, plain = await first_read_and_careful(store)
        assert fast == careful == plain
        assert any(
            isinstance(item, dict) and item.get("call_id") == "c1" and "output" in item
            for item in fast
        )

    asyncio.run(main())


def test_an_index_beside_the_log_is_used_and_outdated_by_appends(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)

    async def main() -> None:
        async with TurnlogSession(store, "s") as session:
            # Enough runs that closing writes the index (REINDEX_AFTER_RECORDS).
            for number in range(8):
                await Runner.run(agent_for(number, tool=True), f"q{number}", session=session)
            before = await session.get_items()
        # Closing wrote the index; the next first read goes through it.
        assert (tmp_path / "s.jsonl.index-openai_agents").exists()
        fast, careful, _, skimmed = await first_read_compared(store)
        assert fast == careful == before
        assert skimmed
        # Records written after the index (by a process killed before its
        # close wrote a new one) are skimmed past it.
        index = tmp_path / "s.jsonl.index-openai_agents"
        outdated = index.read_bytes()
        async with TurnlogSession(store, "s") as session:
            await Runner.run(agent_for(9, tool=True), "q9", session=session)
        index.write_bytes(outdated)
        fast, careful, _ = await first_read_and_careful(store)
        assert fast == careful
        assert len(fast) == len(before) + 4
        assert fast[-1]["content"][0]["text"] == "answer 9"

    asyncio.run(main())


def _saved(items: list[dict[str, Any]], covers: list[int]) -> Any:
    from turnlog import events as ev

    return ev.Custom(type="x_openai_agents_saved", fields={"items": items, "covers": covers})


def test_a_compaction_is_read_the_careful_way(tmp_path: Path) -> None:
    # A compaction keeps a result only while the message asking its call is
    # in the transcript, which a tail does not show: the careful read decides.
    import turnlog
    from turnlog import events as ev
    from turnlog.events import ToolCall

    log = turnlog.open(tmp_path, "s")
    call = ToolCall(id="X", name="lookup", arguments={})
    with log.turn():
        user = log.user("hi")
        with log.step():
            asked = log.assistant("", [call])
            log.append(
                _saved(
                    [
                        {"role": "user", "content": "hi"},
                        {"type": "function_call", "call_id": "X", "name": "lookup"},
                    ],
                    [user.seq, asked.seq],
                )
            )
            with log.dispatch(call) as dispatched:
                dispatched.result("found")
        log.system("note")
        log.append(ev.Compaction(through_seq=user.seq, summary="summary of hi"))
    log.close()

    fast, careful, _ = asyncio.run(first_read_and_careful(JSONLStore(tmp_path)))
    assert fast == careful
    assert any(item.get("type") == "function_call_output" for item in fast)


def test_ids_the_hooks_recorded_before_the_first_read_are_kept(tmp_path: Path) -> None:
    # A run with the hooks and no session (the program keeps its own
    # history), then the SDK saves its items: nothing is written twice.
    store = JSONLStore(tmp_path)

    async def main() -> None:
        async with TurnlogSession(store, "s") as session:
            await Runner.run(agent_for(0, tool=False), "q0", session=session)
        async with TurnlogSession(store, "s") as session:
            result = await Runner.run(agent_for(1, tool=False), "q1", hooks=session.hooks)
            await session.add_items([{"role": "user", "content": "q1"}])
            await session.add_items([item.to_input_item() for item in result.new_items])

    asyncio.run(main())
    answers = [
        event.seq
        for event in store.iter_events("s")
        if event.type == "assistant_message" and "answer 1" in str(event.data.content)
    ]
    assert len(answers) == 1
