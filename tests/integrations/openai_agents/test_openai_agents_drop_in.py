"""TurnlogSession as a drop-in for the Agents SDK's SQLiteSession, with and without hooks."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import forkserver
import turnlog
from turnlog import events as ev
from turnlog.providers import PROVIDERS, render, validate
from turnlog.stores import JSONLStore, SQLiteStore

pytest.importorskip("agents")

from agents import Agent, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.handoffs import Handoff
from agents.testing import ScriptedModel, assistant_message, function_call

from turnlog.integrations.openai_agents import TurnlogSession

set_tracing_disabled(True)

TOOL_SCRIPT: list[Any] = [
    [function_call("lookup", {"q": "x"}, call_id="c1")],
    [assistant_message("found it")],
    [assistant_message("second answer")],
]
TEXT_SCRIPT: list[Any] = [[assistant_message("first answer")], [assistant_message("second")]]


def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


def make_agent(script: list[Any]) -> Agent[Any]:
    tool = function_tool(lookup, name_override="lookup")
    return Agent(name="w", model=ScriptedModel(list(script)), tools=[tool])


def store_of(kind: str, tmp_path: Path) -> Any:
    return JSONLStore(tmp_path) if kind == "jsonl" else SQLiteStore(tmp_path / "s.db")


def turn_ends(store: Any) -> list[str]:
    return [e.data.reason for e in store.iter_events("s") if isinstance(e.data, ev.TurnEnd)]


def tool_results(store: Any) -> dict[str, ev.ToolResult]:
    return {
        e.data.call_id: e.data for e in store.iter_events("s") if isinstance(e.data, ev.ToolResult)
    }


async def two_runs(
    agent: Agent[Any], session: Any, *, hooks: bool, streamed: bool, inputs: tuple[str, ...]
) -> list[Any]:
    outputs = []
    for text in inputs:
        kwargs: dict[str, Any] = {"session": session}
        if hooks:
            kwargs["hooks"] = session.hooks
        if streamed:
            result = Runner.run_streamed(agent, text, **kwargs)
            async for _ in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, text, **kwargs)
        outputs.append(result.final_output)
    return outputs


def side_by_side(
    tmp_path: Path,
    kind: str,
    make: Any,
    *,
    hooks: bool,
    streamed: bool,
    inputs: tuple[str, ...] = ("a", "b"),
) -> tuple[Any, list[Any], list[Any], list[Any], list[Any]]:
    """The same script on a TurnlogSession and on SQLiteSession: (store, items, sdk items,
    outputs, sdk outputs)."""
    store = store_of(kind, tmp_path)

    async def main() -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        async with TurnlogSession(store, "s") as session:
            outs = await two_runs(make(), session, hooks=hooks, streamed=streamed, inputs=inputs)
            items = await session.get_items()
        sdk = SQLiteSession("s", str(tmp_path / "sdk.db"))
        sdk_outs = await two_runs(make(), sdk, hooks=False, streamed=streamed, inputs=inputs)
        sdk_items = await sdk.get_items()
        sdk.close()
        return items, sdk_items, outs, sdk_outs

    items, sdk_items, outs, sdk_outs = asyncio.run(main())
    return store, items, sdk_items, outs, sdk_outs


# -- 1. plain Runner.run ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("script", [TEXT_SCRIPT, TOOL_SCRIPT], ids=["text", "tool"])
def test_plain_runs_without_hooks_match_sqlite_session(
    tmp_path: Path, kind: str, script: list[Any]
) -> None:
    store, items, sdk_items, outs, sdk_outs = side_by_side(
        tmp_path, kind, lambda: make_agent(script), hooks=False, streamed=False
    )
    assert outs == sdk_outs == [script[-2][0].content[0].text, script[-1][0].content[0].text]
    assert items == sdk_items
    assert [i["content"] for i in items if i.get("role") == "user"] == ["a", "b"]
    assert turn_ends(store) == ["complete", "complete"]
    if script is TOOL_SCRIPT:
        assert tool_results(store)["c1"].content == "result for x"


# -- 2. streamed ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("hooks", [False, True], ids=["plain", "hooks"])
def test_streamed_runs_match_sqlite_session(tmp_path: Path, kind: str, hooks: bool) -> None:
    store, items, sdk_items, outs, sdk_outs = side_by_side(
        tmp_path, kind, lambda: make_agent(TOOL_SCRIPT), hooks=hooks, streamed=True
    )
    assert outs == sdk_outs == ["found it", "second answer"]
    assert items == sdk_items
    assert any(i.get("type") == "function_call_output" for i in items)
    assert turn_ends(store) == ["complete", "complete"]
    assert tool_results(store)["c1"].content == "result for x"


# -- 3. handoff -------------------------------------------------------------------------


def handoff_agents() -> Agent[Any]:
    """A, whose model hands off to B; B answers each run."""
    b = Agent(
        name="b",
        model=ScriptedModel([[assistant_message("b here")], [assistant_message("b again")]]),
    )
    return Agent(
        name="a",
        model=ScriptedModel([[function_call(Handoff.default_tool_name(b), {}, call_id="h1")]]),
        handoffs=[b],
    )


def test_the_sdk_default_handoff_name() -> None:
    assert Handoff.default_tool_name(Agent(name="b")) == "transfer_to_b"


async def handoff_then_again(session: Any, *, hooks: bool, streamed: bool) -> list[Any]:
    """A run on A (handed off to B), then a second run on the agent it ended
    with, as an app goes on with `result.last_agent`."""
    agent: Agent[Any] = handoff_agents()
    outs = []
    for text in ("a", "b"):
        kwargs: dict[str, Any] = {"session": session}
        if hooks:
            kwargs["hooks"] = session.hooks
        if streamed:
            result: Any = Runner.run_streamed(agent, text, **kwargs)
            async for _ in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, text, **kwargs)
        outs.append((result.last_agent.name, result.final_output))
        agent = result.last_agent
    return outs


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("hooks", [False, True], ids=["plain", "hooks"])
@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
def test_handoff_then_a_second_run(tmp_path: Path, kind: str, hooks: bool, streamed: bool) -> None:
    store = store_of(kind, tmp_path)

    async def main() -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        async with TurnlogSession(store, "s") as session:
            outs = await handoff_then_again(session, hooks=hooks, streamed=streamed)
            items = await session.get_items()
        sdk = SQLiteSession("s", str(tmp_path / "sdk.db"))
        sdk_outs = await handoff_then_again(sdk, hooks=False, streamed=streamed)
        sdk_items = await sdk.get_items()
        sdk.close()
        return items, sdk_items, outs, sdk_outs

    items, sdk_items, outs, sdk_outs = asyncio.run(main())
    assert outs == sdk_outs == [("b", "b here"), ("b", "b again")]
    assert items == sdk_items
    assert [i["name"] for i in items if i.get("type") == "function_call"] == ["transfer_to_b"]
    assert [i["call_id"] for i in items if i.get("type") == "function_call_output"] == ["h1"]
    result = tool_results(store)["h1"]
    assert result.name == "transfer_to_b" and not result.is_error
    assert turn_ends(store) == ["complete", "complete"]


# -- 4. SIGKILL mid-tool in a streamed run ----------------------------------------------

CHILD = """
import asyncio, os, signal, sys
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, function_call
from turnlog.integrations.openai_agents import TurnlogSession

set_tracing_disabled(True)
root, ledger, hooks = sys.argv[1], sys.argv[2], sys.argv[3] == "1"

def pay(amount: int) -> str:
    \"\"\"Pay.\"\"\"
    with open(ledger, "a") as f:
        f.write(f"paid {amount}\\n")
        f.flush()
        os.fsync(f.fileno())
    os.kill(os.getpid(), signal.SIGKILL)
    return "paid"

agent = Agent(
    name="w",
    model=ScriptedModel([[function_call("pay", {"amount": 5}, call_id="k1")]]),
    tools=[function_tool(pay, name_override="pay")],
)

async def main():
    session = TurnlogSession(root, "s")
    kwargs = {"session": session}
    if hooks:
        kwargs["hooks"] = session.hooks
    result = Runner.run_streamed(agent, "pay 5", **kwargs)
    async for _ in result.stream_events():
        pass

asyncio.run(main())
"""


@pytest.mark.parametrize("hooks", [True, False], ids=["hooks", "plain"])
def test_streamed_run_killed_mid_tool_resumes_without_running_it_twice(
    tmp_path: Path, hooks: bool
) -> None:
    root = tmp_path / "log"
    ledger = tmp_path / "ledger.txt"
    child = forkserver.run(
        [sys.executable, "-c", CHILD, str(root), str(ledger), "1" if hooks else "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -9, child.stderr
    assert ledger.read_text() == "paid 5\n"

    store = JSONLStore(root)
    found = turnlog.inspect(store, "s")
    if hooks:
        assert (found.status, found.reason) == ("interrupted", "interrupted")
    else:
        # Without hooks the log holds only the input the SDK saved before its
        # first model call: no turn was open, so nothing was interrupted.
        assert (found.status, found.reason) == ("idle", "needs_response")
    plan = turnlog.recover(store, "s").plan
    assert bool(plan.events) is hooks
    assert turnlog.inspect(store, "s").status != "interrupted"

    def pay(amount: int) -> str:
        """Pay."""
        with ledger.open("a") as f:
            f.write(f"paid again {amount}\n")
        return "paid"

    agent = Agent(
        name="w",
        model=ScriptedModel([[assistant_message("I will check the payment first")]]),
        tools=[function_tool(pay, name_override="pay")],
    )

    async def main() -> tuple[Any, list[Any]]:
        async with TurnlogSession(store, "s") as session:
            kwargs: dict[str, Any] = {"session": session}
            if hooks:
                kwargs["hooks"] = session.hooks
            result = Runner.run_streamed(agent, "continue", **kwargs)
            async for _ in result.stream_events():
                pass
            return result.final_output, await session.get_items()

    final, items = asyncio.run(main())
    assert final == "I will check the payment first"
    assert ledger.read_text() == "paid 5\n"
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    if hooks:
        calls = [i for i in items if i.get("type") == "function_call"]
        assert [c["call_id"] for c in calls] == ["k1"]
        assert [o["call_id"] for o in outputs] == ["k1"]
        text = json.dumps(outputs[0]["output"])
        assert "may have run" in text and "NOT been retried" in text
        recovered = tool_results(store)["k1"]
        assert recovered.is_error and recovered.risk == "tool_outcome_unknown", recovered
    else:
        # Without hooks the SDK saved nothing of the killed step (it saves after
        # the tools finish): the session holds the inputs and the new answer.
        assert outputs == []
        assert [(i.get("role"), i.get("content")) for i in items[:2]] == [
            ("user", "pay 5"),
            ("user", "continue"),
        ]
        assert [i.get("role") for i in items] == ["user", "user", "assistant"]
    assert turn_ends(store) == (["interrupted", "complete"] if hooks else ["complete"])


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_history_the_assistant_opens_is_kept_as_saved_and_out_of_the_transcript(
    kind: str, tmp_path: Path
) -> None:
    # The SDK's own sessions take a history that begins with the assistant
    # (its tests seed one); no provider takes such a transcript. The items
    # are handed back as saved, the transcript starts at the first user
    # message, and every export stays valid.
    store = store_of(kind, tmp_path)
    seeded = [
        {"type": "message", "role": "assistant", "content": "Hello, how can I help?"},
        {"type": "function_call", "call_id": "c0", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c0", "output": "earlier"},
    ]

    async def main() -> tuple[list[Any], list[Any]]:
        async with TurnlogSession(store, "s") as session:
            await session.add_items(seeded)
            before = await session.get_items()
            await Runner.run(make_agent(TEXT_SCRIPT), "hi", session=session)
            return before, await session.get_items()

    before, after = asyncio.run(main())
    assert before == seeded
    assert after[:3] == seeded and after[3]["content"] == "hi"
    with turnlog.open(store, "s") as log:
        messages = log.messages
    assert [m.role for m in messages] == ["user", "assistant"]
    for provider in PROVIDERS:
        assert validate(provider, render(provider, messages)) == []
