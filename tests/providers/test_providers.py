"""Provider renderers and validators on every fixture session; golden outputs pinned."""

from __future__ import annotations

import json
import os

import pytest

from paths import TESTS
from provider_fixtures import FIXTURES, GEMINI_TEXT, REASONING, THINKING, crashed_unrecovered
from turnlog import providers
from turnlog.core.fold import fold
from turnlog.core.recovery import patch_dangling_tool_calls

GOLDEN = TESTS / "golden" / "providers"
UPDATE = os.environ.get("TURNLOG_UPDATE_GOLDEN") == "1"
PROVIDERS = list(providers.PROVIDERS)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_renders_valid_and_matches_golden(fixture: str, provider: str) -> None:
    payload = providers.render(provider, fold(FIXTURES[fixture]()).messages)
    assert providers.validate(provider, payload) == []
    golden = GOLDEN / f"{fixture}.{provider}.json"
    text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert golden.read_text() == text, f"{golden.name} changed; rerun with TURNLOG_UPDATE_GOLDEN=1"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unrecovered_crash_fails_naming_the_call(provider: str) -> None:
    payload = providers.render(provider, fold(crashed_unrecovered()).messages)
    violations = providers.validate(provider, payload)
    assert violations
    assert {v.call_id for v in violations} == {"call_pay"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_patch_in_memory_makes_it_valid(provider: str) -> None:
    messages = patch_dangling_tool_calls(fold(crashed_unrecovered()).messages)
    assert providers.validate(provider, providers.render(provider, messages)) == []


def test_reasoning_survives_byte_for_byte() -> None:
    messages = fold(FIXTURES["thinking"]()).messages
    anthropic = providers.render("anthropic", messages)
    assert json.dumps(anthropic["messages"][1]["content"][0]) == json.dumps(THINKING)
    responses = providers.render("openai-responses", messages)
    reasoning = [i for i in responses["input"] if i.get("type") == "reasoning"]
    assert json.dumps(reasoning) == json.dumps([REASONING])
    assert responses["input"][responses["input"].index(REASONING) + 1]["type"] == "message"
    function_call = next(i for i in responses["input"] if i.get("type") == "function_call")
    assert function_call["id"] == "fc_0123"
    gemini = providers.render("gemini", messages)
    model = gemini["contents"][1]["parts"]
    assert model[0] == {
        "text": GEMINI_TEXT["text"],
        "thoughtSignature": GEMINI_TEXT["thought_signature"],
    }
    assert model[1]["thoughtSignature"] == "Q2lRQlZLaGFfX18="
    # Other providers' signed reasoning never leaks where it cannot be verified.
    chat = providers.render("openai-chat", messages)
    assert "signature" not in json.dumps(chat) and "encrypted_content" not in json.dumps(chat)


def test_results_and_resume_notice_form_one_user_turn() -> None:
    messages = fold(FIXTURES["revived"]()).messages
    anthropic = providers.render("anthropic", messages)["messages"]
    last = anthropic[-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "text"]
    assert last["content"][0]["is_error"] is True
    gemini = providers.render("gemini", messages)["contents"][-1]
    assert list(gemini["parts"][0]) == ["functionResponse"] and "text" in gemini["parts"][1]
    chat = providers.render("openai-chat", messages)["messages"]
    assert [m["role"] for m in chat[-2:]] == ["tool", "user"]


def test_validators_catch_what_providers_reject() -> None:
    anthropic = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "x"},
                    {"type": "tool_result", "tool_use_id": "a", "content": "r"},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "ghost", "content": "r"}],
            },
        ]
    }
    messages = {v.message for v in providers.validate("anthropic", anthropic)}
    assert any("must come first" in m for m in messages)
    assert any("without a matching tool_use" in m for m in messages)
    chat = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "x", "content": "r"},
        ]
    }
    assert providers.validate("openai-chat", chat)[0].call_id == "x"
    responses = {"input": [{"type": "reasoning", "id": "rs", "summary": []}]}
    assert "following item" in providers.validate("openai-responses", responses)[0].message
    gemini = {
        "contents": [
            {"role": "user", "parts": [{"text": "a"}]},
            {"role": "user", "parts": [{"text": "b"}]},
        ]
    }
    assert "alternate" in providers.validate("gemini", gemini)[0].message


def test_unknown_provider_is_a_usage_error() -> None:
    import turnlog

    with pytest.raises(turnlog.UsageError) as info:
        providers.render("bard", ())
    assert "anthropic" in info.value.hint


def test_a_reused_call_id_is_renamed_to_one_anthropic_accepts() -> None:
    """Anthropic refuses a tool_use id with characters other than letters,
    digits, `_` and `-`: the rename of a reused id keeps to them."""
    import re

    from turnlog import events as ev
    from turnlog.core.state import Message
    from turnlog.providers.common import original_id, unique_call_ids

    asked = [
        Message(
            role="assistant", content="", seq=s, tool_calls=(ev.ToolCall(id="call_0", name="t"),)
        )
        for s in (1, 3)
    ]
    ids = [m.tool_calls[0].id for m in unique_call_ids(asked)]
    assert ids == ["call_0", "call_0__2"]
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]+", i) for i in ids)
    assert [original_id(i) for i in ids] == ["call_0", "call_0"]
