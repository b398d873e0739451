"""Numbers on the command line: every numeric option of every command goes
through one parser, and a bad number (nan, inf, past 64 bits, negative, a
word, a fraction where a count belongs) is a usage error (exit 2) with a hint,
never a traceback and never a guard quietly turned off."""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import shutil
import time
from pathlib import Path

import click
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from builders import crashed_session, put
from entry_point import cli
from foreign_fixtures import SID, ClaudeCode, tool_use, write
from paths import TESTS
from turnlog.cli import main
from turnlog.cli.numbers import MAX_SECONDS, MAX_WHOLE, Seconds, WholeNumber
from turnlog.errors import UsageError
from turnlog.formats.foreign import refuse_if_live
from turnlog.formats.rescue import doctor
from turnlog.stores import JSONLStore

FIXTURES = TESTS / "fixtures"

# Numeric options of modules edited elsewhere at the time of writing; each
# moves to the parser there (`ls --limit`: WholeNumber(min_value=1); `fork
# --at`: WholeNumber(min_value=0)), and is then held to it like the rest.
ELSEWHERE: set[tuple[str, str]] = set()
ONE_PARSER = (WholeNumber, Seconds)


def _numeric_options() -> dict[tuple[str, str], click.Parameter]:
    """Every numeric option and argument of every command, by (command, name)."""
    found: dict[tuple[str, str], click.Parameter] = {}

    def walk(command: click.Command, path: str) -> None:
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(sub, f"{path} {name}".strip())
            return
        for param in command.params:
            numeric = (click.types.IntParamType, click.types.FloatParamType, *ONE_PARSER)
            if isinstance(param.type, numeric):
                found[(path, param.opts[0])] = param

    walk(main, "")
    return found


NUMERIC = _numeric_options()
PARSED = {key: param for key, param in NUMERIC.items() if isinstance(param.type, ONE_PARSER)}


def test_every_numeric_option_uses_the_one_parser() -> None:
    others = {key for key in NUMERIC if key not in PARSED}
    assert others <= ELSEWHERE, sorted(others - ELSEWHERE)
    # Not vacuous: the commands this file can reach all have numbers.
    assert {("show", "--tail"), ("doctor", "--live-window"), ("sweep", "--older-than")} <= set(
        PARSED
    )


# -- the real command line, on real files -------------------------------------------


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding a finished session, and a crashed Claude Code file long quiet."""
    root = tmp_path_factory.mktemp("numbers")
    shutil.copy(FIXTURES / "finished.jsonl", root / "finished.jsonl")
    cc = ClaudeCode()
    cc.user("deploy it")
    cc.assistant("msg_1", tool_use("toolu_1", command="make deploy"))
    crashed = write(root / "projects", f"{SID}.jsonl", cc.data())
    past = time.time() - 3600
    os.utime(crashed, (past, past))
    return root


def _command_line(place: Path, command: str) -> tuple[list[str], int | None]:
    """A run of `command` that reads only, and the exit code it ends with."""
    finished = str(place / "finished.jsonl")
    crashed = str(place / "projects" / f"{SID}.jsonl")
    lines: dict[str, tuple[list[str], int | None]] = {
        "show": (["show", finished], 0),
        "inspect": (["inspect", finished], 0),
        "revive": (["revive", finished], 1),  # finished: nothing to revive, nothing written
        "sweep": (["sweep", "--store", str(place)], 0),
        "doctor": (["doctor", "claude-code", crashed, "--dry-run"], 1),
        "ls": (["ls", "--store", str(place)], 0),
        "fork": (["fork", finished, "--id", "numbers-fork"], None),
    }
    return lines[command]


def _files(place: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(place.rglob("*")) if path.is_file()}


_WHOLE_TEXT = re.compile(r"[+-]?[0-9]+")
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# What a shell passes: any text but NUL, in any script.
_ARGUMENT_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=30,
)
_NON_FINITE = st.sampled_from(
    ["nan", "NaN", "-nan", "+nan", "inf", "-inf", "+inf", "Infinity", "-Infinity", "INF"]
)
_MALFORMED = st.sampled_from(
    ["", " ", " 3", "3 ", "1_000", "0x10", "1e3", "3.", ".5", "+", "-", "--1", "١٢", "3s", "ten"]
)


def _bad_whole(min_value: int) -> st.SearchStrategy[str]:
    return st.one_of(
        _NON_FINITE,
        _MALFORMED.filter(lambda text: not _WHOLE_TEXT.fullmatch(text)),
        st.integers(max_value=min_value - 1).map(str),
        st.integers(min_value=MAX_WHOLE + 1).map(str),
        st.just("99999999999999999999"),
        st.just("9" * 5000),
        st.just("-" + "9" * 5000),
        # Floats for a count: "2.0", "1e+16", "nan" all have more than digits.
        st.floats().map(repr),
        _ARGUMENT_TEXT.filter(lambda text: not _WHOLE_TEXT.fullmatch(text)),
    )


def _good_whole(min_value: int) -> st.SearchStrategy[str]:
    number = st.integers(min_value=min_value, max_value=MAX_WHOLE)
    return st.one_of(number.map(str), number.map(lambda n: f"+{n}"), number.map(lambda n: f"0{n}"))


def _bad_seconds() -> st.SearchStrategy[str]:
    return st.one_of(
        _NON_FINITE,
        _MALFORMED.filter(lambda text: not _DECIMAL_TEXT.fullmatch(text)),
        st.floats(max_value=-1e-300).map(repr),
        st.integers(max_value=-1).map(str),
        st.floats(min_value=MAX_SECONDS, exclude_min=True, allow_infinity=True).map(repr),
        st.integers(min_value=MAX_SECONDS + 1).map(str),
        st.sampled_from(["1e400", "-1e400", "9" * 400, "1e309"]),
        _ARGUMENT_TEXT.filter(lambda text: not _DECIMAL_TEXT.fullmatch(text)),
    )


def _good_seconds() -> st.SearchStrategy[str]:
    return st.one_of(
        st.floats(min_value=0, max_value=MAX_SECONDS).map(repr),
        st.integers(min_value=0, max_value=MAX_SECONDS).map(str),
        st.sampled_from(["0", "-0", "0.5", ".5", "600", "1e3", "1E-3", "+10"]),
    )


def _strategies(param: click.Parameter) -> tuple[st.SearchStrategy[str], st.SearchStrategy[str]]:
    kind = param.type
    if isinstance(kind, WholeNumber):
        low = int(kind.min_value)
        return _bad_whole(low), _good_whole(low)
    return _bad_seconds(), _good_seconds()


CASES = sorted(PARSED)
IDS = [f"{command} {option}" for command, option in CASES]


def examples(count: int) -> settings:
    """Each example is a process: no deadline, and the same examples every run."""
    return settings(
        max_examples=count,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


@pytest.mark.parametrize(("command", "option"), CASES, ids=IDS)
def test_a_number_is_taken_only_when_it_is_one(place: Path, command: str, option: str) -> None:
    """Through the real entry point: a bad number is exit 2 naming the option,
    with a hint, and nothing acted on; a good one runs the command as usual."""
    bad, good = _strategies(PARSED[(command, option)])
    line, expected = _command_line(place, command)

    @examples(30)
    @given(case=st.one_of(bad.map(lambda v: (v, False)), good.map(lambda v: (v, True))))
    def check(case: tuple[str, bool]) -> None:
        value, is_good = case
        before = _files(place)
        code, out, err = cli(*line, f"{option}={value}")  # no traceback, ever
        if is_good:
            assert "Invalid value" not in err, (value, err)
            assert expected is None or code == expected, (value, code, err)
            return
        assert code == 2, (value, code, out, err)
        assert f"Invalid value for '{option}'" in err, (value, err)
        assert "hint: give a " in err and f"such as {option} " in err, (value, err)
        assert _files(place) == before, value  # nothing read as a number and acted on

    check()


def test_the_parser_keeps_the_value() -> None:
    """What a command receives is the number typed, whole or in seconds."""
    whole = WholeNumber(min_value=1, example="20")
    assert whole.convert("+007", None, None) == 7
    assert whole.convert(str(MAX_WHOLE), None, None) == MAX_WHOLE
    seconds = Seconds(example="600")
    assert seconds.convert("1e3", None, None) == 1000.0
    assert math.copysign(1, seconds.convert("-0", None, None)) == 1.0
    assert seconds.convert(".5", None, None) == 0.5


# -- the bugs as they were reported ------------------------------------------------------


def test_a_tail_past_64_bits_is_a_usage_error_not_a_traceback() -> None:
    code, _, err = cli("show", "--tail", "99999999999999999999", str(FIXTURES / "finished.jsonl"))
    assert code == 2 and "'--tail'" in err and "hint:" in err


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "-1"])
def test_a_live_window_that_is_no_number_keeps_the_guard(tmp_path: Path, value: str) -> None:
    cc = ClaudeCode()
    cc.user("charge the card")
    cc.assistant("msg_1", tool_use("toolu_1", command="./charge --amount 30"))
    path = write(tmp_path, f"{SID}.jsonl", cc.data())
    past = time.time() - 0.5  # written half a second ago: its tool may be writing it
    os.utime(path, (past, past))
    before = path.read_bytes()
    code, _, err = cli("doctor", "claude-code", str(path), "--yes", f"--live-window={value}")
    assert code == 2 and "'--live-window'" in err, err
    assert path.read_bytes() == before
    # The library takes no such window either, and appends nothing.
    number = float(value)
    with pytest.raises(UsageError):
        doctor(str(path), "claude-code", live_window_s=number)
    with pytest.raises(UsageError):
        refuse_if_live(str(path), window_s=number)
    assert path.read_bytes() == before


def _crashed_just_now(store: Path) -> Path:
    now = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
    events = [msgspec.structs.replace(e, ts=now) for e in crashed_session("run-1")]
    put(JSONLStore(str(store)), events)
    return store / "run-1.jsonl"


@pytest.mark.parametrize("value", ["nan", "inf", "1e400"])
def test_sweep_older_than_that_is_no_number_sweeps_nothing(tmp_path: Path, value: str) -> None:
    path = _crashed_just_now(tmp_path)
    before = path.read_bytes()
    code, _, err = cli("sweep", "--store", str(tmp_path), f"--older-than={value}")
    assert code == 2 and "'--older-than'" in err, err
    assert path.read_bytes() == before
    # The guard itself still holds for a real number: a crash this young is left.
    code, out, err = cli("sweep", "--store", str(tmp_path), "--older-than", "3600")
    assert code == 0 and path.read_bytes() == before, (out, err)
