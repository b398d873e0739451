"""The three texts of a content value: one home each (`turnlog.text`), called by their names."""

from __future__ import annotations

from typing import Any

import pytest

import turnlog.formats.builder
import turnlog.providers.common
from turnlog.events import content_text
from turnlog.text import display_text, foreign_text, message_text

CONTENTS: list[Any] = [
    "",
    "plain",
    [],
    [{"type": "text", "text": "a"}, {"type": "text", "text": ""}, {"type": "text", "text": "b"}],
    [{"type": "thinking", "text": "hmm"}, {"type": "text", "text": "said"}],
    [{"type": "image", "source": "x"}, {"type": "text", "text": "caption"}],
]
FOREIGN: list[Any] = [
    None,
    "s",
    [{"type": "text", "text": "a"}, None, {"content": [{"text": "b"}]}],
    {"output": {"text": "done"}},
    {"exit_code": 0},
    42,
]


def test_the_documented_old_name_is_the_one_home_and_no_other_alias_is_left() -> None:
    # `turnlog.events.content_text` is documented: it stays, as the rule itself.
    assert content_text is display_text
    # The private aliases are gone: each renderer and reader calls the rule by name.
    assert not hasattr(turnlog.providers.common, "text_of")
    assert not hasattr(turnlog.formats.builder, "text_of")


def test_each_text_means_what_its_name_says() -> None:
    parts = [
        {"type": "thinking", "text": "hmm"},
        {"type": "text", "text": ""},
        {"type": "text", "text": "said"},
    ]
    # For a person: every part that carries text, reasoning included.
    assert display_text(parts) == "hmm\n\nsaid"
    # For a provider: the text parts only, empty ones left out.
    assert message_text(parts) == "said"
    # From another program: strings, blocks and objects by their members.
    assert foreign_text({"output": {"text": "done"}}) == "done"
    assert (
        foreign_text([{"type": "text", "text": "a"}, None, {"content": [{"text": "b"}]}]) == "a\nb"
    )
    assert foreign_text({"exit_code": 0}) == '{"exit_code":0}'


@pytest.mark.parametrize("content", CONTENTS)
def test_display_and_message_text_agree_on_plain_strings(content: Any) -> None:
    if isinstance(content, str):
        assert display_text(content) == message_text(content) == foreign_text(content)
