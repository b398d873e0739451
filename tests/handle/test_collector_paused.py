"""A bulk read holds the cycle collector off and gives it back as it found it."""

from __future__ import annotations

import gc

import pytest

import turnlog
from turnlog.handle.bulk import collector_paused


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_it_is_on_again_after_an_error() -> None:
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_it_stays_off_until_the_last_of_two_overlapping_reads_ends() -> None:
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second read still holds it off
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_collector_the_program_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_reading_a_whole_log_collects_once_not_once_per_700_objects(tmp_path: object) -> None:
    """The fold of a long log builds thousands of objects that live on (each
    message's parts): read with the collector running, that is a young
    collection per 700 of them; held off, one collection once it is done."""
    path = f"{tmp_path}/s.jsonl"
    with turnlog.open(path, create=True) as log:
        for number in range(2000):
            log.user([{"type": "text", "text": f"message {number}"}])
    collections: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    with turnlog.open(path) as log:
        gc.callbacks.append(seen)
        try:
            assert len(log.messages) == 2000
        finally:
            gc.callbacks.remove(seen)
    assert len(collections) <= 1, collections
    assert gc.isenabled()
