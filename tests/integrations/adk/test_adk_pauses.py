"""Google ADK's confirmations and long-running tools on TurnlogSessionService: paused, not crashed, on every store.

A `require_confirmation` tool (`gate`), a body that calls
`tool_context.request_confirmation()` (`asks`) and a `LongRunningFunctionTool`
(`long`) stop the run in one process, SIGKILLed while it waits; `turnlog
sweep --revive` leaves the session; a second process appends the client's
answer (SIGKILLed once it is written); a third runs the agent on it. The
ledger the tool syncs is the ground truth: an approved charge runs once, a
declined one never, a long-running one starts once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import forkserver

pytest.importorskip("google.adk")

import pause_checks
import turnlog
from paths import SUPPORT
from pause_checks import (
    Tally,
    charges,
    check_valid,
    decisions_of,
    events_of,
    print_tally,
    results_of,
    store_url,
    swept,
)
from turnlog import events as ev

PROGRAM = str(SUPPORT / "adk_pause_program.py")
CONFIRM = "adk_request_confirmation"


_step = pause_checks.program_step(PROGRAM)


def step(name: str, store: str, ledger: Path, decision: str = "approve", **options: str) -> Any:
    """One process of the program: `kill` (default none), `mode` (default gate)."""
    return _step(
        name, store, ledger, decision, options.get("kill", "none"), options.get("mode", "gate")
    )


def paused_in_one_process(store: str, ledger: Path, mode: str) -> str:
    """The run stops waiting and its process is killed; a sweep leaves the
    session. Returns the id of the call that waits."""
    Tally.runs += 1
    assert step("run", store, ledger, kill="waiting", mode=mode) is None
    found = turnlog.inspect(store, pause_checks.SESSION)
    assert found.status == "paused", (found.status, found.owed_calls, found.reason)
    assert found.owed_calls == ()
    (waiting,) = found.awaiting
    expected = {
        "gate": ("pay", "approval"),
        "asks": (CONFIRM, "approval"),
        "long": ("pay", "external"),
    }
    assert (waiting.name, waiting.kind) == expected[mode]
    assert waiting.decided_in == "the ADK client's function response"
    assert (waiting.call_id == "c1") == (mode != "asks")
    done = swept(store)
    assert "paused: waiting for" in done.stdout + done.stderr
    # The body that asks ran to ask, and charged nothing; a long-running
    # tool's body started the charge.
    assert charges(ledger) == (1 if mode == "long" else 0)
    return waiting.call_id


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize(
    ("mode", "decision"),
    [
        ("gate", "approve"),
        ("gate", "deny"),
        ("asks", "approve"),
        ("asks", "deny"),
        ("long", "deliver"),
    ],
)
def test_decided_by_the_client_in_a_second_process_and_resumed_in_a_third(
    kind: str, mode: str, decision: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = store_url(kind, tmp_path, request)
    ledger = tmp_path / "ledger.txt"
    waiting = paused_in_one_process(store, ledger, mode)
    assert step("decide", store, ledger, decision, kill="decided", mode=mode) is None
    events = events_of(store)
    expected = {"approve": "approved", "deny": "rejected", "deliver": "delivered"}[decision]
    assert decisions_of(events) == [expected]
    if decision == "approve":
        # Approved, not yet acted on: still paused, and a sweep leaves it.
        assert turnlog.inspect(store, pause_checks.SESSION).status == "paused"
        swept(store)
    done = step("resume", store, ledger, decision, mode=mode)
    assert done["status"] == "finished", done
    events = check_valid(store)
    (answer,) = results_of(events, waiting)
    if decision == "approve":
        assert charges(ledger) == 1 and answer.content == "paid bob 5"
        kinds = [type(e.data).__name__ for e in events if repr(waiting) in repr(e.data)]
        assert kinds.index("ToolDecision") < kinds.index("ToolDispatch")
        assert "paid bob 5" in done["output"]
    elif decision == "deny":
        Tally.rejected_ran += charges(ledger)
        assert charges(ledger) == 0 and answer.rule == "A1"
        assert not any(
            isinstance(e.data, ev.ToolDispatch) and e.data.call_id == waiting for e in events
        )
        assert "did not run" in done["output"]
    else:
        assert charges(ledger) == 1 and answer.content == '{"status": "paid"}'
        assert '"paid"' in done["output"]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize("mode", ["gate", "asks"])
def test_resume_killed_in_the_tool_is_judged_and_never_runs_twice(
    kind: str, mode: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = store_url(kind, tmp_path, request)
    ledger = tmp_path / "ledger.txt"
    waiting = paused_in_one_process(store, ledger, mode)
    assert step("resume", store, ledger, kill="in_body", mode=mode) is None
    swept(store)
    (answer,) = results_of(events_of(store), waiting)
    assert answer.rule == "R1" and answer.risk == "tool_outcome_unknown"
    # The client sends its answer again: the call is answered, and it does not run.
    step("resume", store, ledger, mode=mode)
    assert step("continue", store, ledger, mode=mode)["status"] == "finished"
    ran = charges(ledger)
    Tally.ran_twice += ran > 1
    assert ran == 1
    check_valid(store)


@pytest.mark.parametrize("mode", ["gate", "asks", "long"])
def test_a_new_message_while_waiting_ends_the_wait_as_may_have_run(
    mode: str, tmp_path: Path
) -> None:
    store = str(tmp_path / "sessions")
    ledger = tmp_path / "ledger.txt"
    waiting = paused_in_one_process(store, ledger, mode)
    assert step("continue", store, ledger, mode=mode)["status"] == "finished"
    events = check_valid(store)
    (answer,) = results_of(events, waiting)
    # The client may still act on ADK's request unseen: the log cannot say it did not.
    assert answer.rule == "A3" and answer.risk == "tool_outcome_unknown"
    assert charges(ledger) == (1 if mode == "long" else 0)


@pytest.mark.parametrize("mode", ["gate", "asks", "long"])
def test_a_wait_expired_by_a_sweep_runs_nothing_on_a_late_answer(mode: str, tmp_path: Path) -> None:
    import sys

    store = str(tmp_path / "sessions")
    ledger = tmp_path / "ledger.txt"
    waiting = paused_in_one_process(store, ledger, mode)
    done = forkserver.run(
        [sys.executable, "-m", "turnlog", "sweep", "--store", store, "--paused-max-age", "0"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (answer,) = results_of(events_of(store), waiting)
    # Its answer was ADK's client's to give: it may yet act on it unseen.
    assert answer.rule == "A3" and answer.risk == "tool_outcome_unknown"
    # The turn ended expired: nothing waits, nothing is owed.
    assert turnlog.inspect(store, pause_checks.SESSION).status in {"idle", "finished"}
    # The client's answer comes late: the log holds the call's answer, and
    # ADK is handed it; nothing runs.
    late = step("resume", store, ledger, mode=mode)
    assert late["status"] == "finished", late
    assert charges(ledger) == (1 if mode == "long" else 0)
    check_valid(store)


@pytest.mark.parametrize(("answers", "ran"), [("approve,deny", 0), ("deny,approve", 1)])
def test_two_answers_in_one_message_count_as_adk_counts_them(
    answers: str, ran: int, tmp_path: Path
) -> None:
    """ADK takes the last answer for a confirmation: so does the log, and the
    call runs only if that one confirms it."""
    store = str(tmp_path / "sessions")
    ledger = tmp_path / "ledger.txt"
    paused_in_one_process(store, ledger, "gate")
    assert step("resume", store, ledger, answers)["status"] == "finished"
    events = check_valid(store)
    assert decisions_of(events) == ["approved" if ran else "rejected"]
    assert charges(ledger) == ran


def test_a_callback_that_answers_a_gated_call_first_is_its_answer_not_a_pause(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "sessions")
    ledger = tmp_path / "ledger.txt"
    done = step("run", store, ledger, mode="guarded")
    assert done["status"] == "finished", done
    events = check_valid(store)
    assert not any(isinstance(e.data, ev.ToolPaused) for e in events)
    (answer,) = results_of(events, "c1")
    assert "blocked by policy" in str(answer.content)
    assert charges(ledger) == 0


def test_an_agent_tool_with_the_plugin_runs_its_inner_agent(tmp_path: Path) -> None:
    """An `AgentTool` hands the plugin on to an inner runner on a session of
    its own: the plugin leaves that session alone, and the call is recorded
    once, as the outer session's."""
    import asyncio

    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.apps.app import App
    from google.adk.runners import Runner
    from google.adk.tools.agent_tool import AgentTool
    from google.genai import types

    import adk_pause_program as program
    from turnlog.integrations.adk import TurnlogSessionService

    program.MODE[0] = "asks"

    def look(q: str) -> str:
        """Look something up."""
        return f"{q}: 100"

    class Asks(program.Scripted):
        """Asks for `call` on the user's words; says `said` once answered."""

        call: types.FunctionCall
        said: str

        async def generate_content_async(  # type: ignore[override]
            self, llm_request: Any, stream: bool = False
        ) -> Any:
            last = llm_request.contents[-1].parts or []
            part = (
                types.Part(function_call=self.call)
                if any(p.text for p in last)
                else types.Part(text=self.said)
            )
            yield program.LlmResponse(content=types.Content(role="model", parts=[part]))

    inner_call = types.FunctionCall(id="i1", name="look", args={"q": "b"})
    outer_call = types.FunctionCall(id="c1", name="banker", args={"request": "b"})

    async def run() -> None:
        async with TurnlogSessionService(tmp_path / "sessions") as sessions:
            inner = LlmAgent(
                name="banker",
                model=Asks(call=inner_call, said="inner done"),
                tools=[look],
                description="looks",
            )
            outer = Asks(call=outer_call, said="done")
            agent = LlmAgent(name="clerk", model=outer, tools=[AgentTool(inner)])
            app = App(name="shop", root_agent=agent, plugins=[sessions.plugin])
            runner = Runner(app=app, session_service=sessions)
            await sessions.create_session(app_name="shop", user_id="u", session_id="pay")
            message = types.Content(role="user", parts=[types.Part(text="ask the banker")])
            async for _ in runner.run_async(user_id="u", session_id="pay", new_message=message):
                pass

    asyncio.run(run())
    assert turnlog.inspect(tmp_path / "sessions", "pay").status == "finished"
    (answer,) = results_of(events_of(str(tmp_path / "sessions")), "c1")
    assert "inner done" in str(answer.content)


def test_a_paused_session_refuses_a_decision_from_the_command_line(tmp_path: Path) -> None:
    store = str(tmp_path / "sessions")
    paused_in_one_process(store, tmp_path / "ledger.txt", "gate")
    before = events_of(store)
    import sys

    done = forkserver.run(
        [sys.executable, "-m", "turnlog", "approve", "--store", store, "pay", "c1"],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "ADK client's function response" in done.stderr
    assert events_of(store) == before


def test_without_the_plugin_a_confirmation_warns_and_nothing_is_paused(tmp_path: Path) -> None:
    import asyncio

    from google.adk.apps.app import App
    from google.adk.runners import Runner
    from google.genai import types

    import adk_pause_program as program
    from turnlog.integrations.adk import TurnlogSessionService
    from turnlog.integrations.adk.pauses import UnpluggedPauseWarning

    program.MODE[0] = "gate"
    program.LEDGER[:] = [tmp_path / "ledger.txt"]

    async def run() -> None:
        async with TurnlogSessionService(tmp_path / "sessions") as sessions:
            agent = program.LlmAgent(name="clerk", model=program.Scripted(), tools=program.tools())
            runner = Runner(app=App(name="shop", root_agent=agent), session_service=sessions)
            await sessions.create_session(app_name="shop", user_id="u", session_id="pay")
            message = types.Content(role="user", parts=[types.Part(text="pay bob 5")])
            async for _ in runner.run_async(user_id="u", session_id="pay", new_message=message):
                pass

    with pytest.warns(UnpluggedPauseWarning, match="plugins=\\[sessions.plugin\\]"):
        asyncio.run(run())
    assert turnlog.inspect(tmp_path / "sessions", "pay").status != "paused"
    assert charges(tmp_path / "ledger.txt") == 0


def test_zz_tally() -> None:
    """The counts the closing note gives (printed; run last in this module)."""
    print_tally("adk pauses")
