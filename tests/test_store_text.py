"""The three texts of a content value in their one home agree with the copies still in use."""

from __future__ import annotations

from typing import Any

import pytest

from turnlog.events import content_text
from turnlog.formats.transcript import text_of as transcript_text_of
from turnlog.providers.common import text_of as provider_text_of
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


@pytest.mark.parametrize("content", CONTENTS)
def test_display_and_message_text_are_the_copies_they_replace(content: Any) -> None:
    assert display_text(content) == content_text(content)
    assert message_text(content) == provider_text_of(content)


@pytest.mark.parametrize("value", FOREIGN + CONTENTS)
def test_foreign_text_is_the_importers_copy(value: Any) -> None:
    assert foreign_text(value) == transcript_text_of(value)


def test_the_three_texts_differ_where_their_meanings_do() -> None:
    content = [{"type": "thinking", "text": "hmm"}, {"type": "text", "text": "said"}]
    assert display_text(content) == "hmm\nsaid"
    assert message_text(content) == "said"
    assert foreign_text({"text": "x", "output": "y"}) == "x"
