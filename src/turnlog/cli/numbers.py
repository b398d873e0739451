"""The one parser of numeric command-line options: whole numbers and seconds, checked."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Final

import click

if TYPE_CHECKING:
    _ParamType = click.ParamType[Any, Any]
else:
    # Subscripted for the type checker only: older clicks' ParamType is not generic.
    _ParamType = click.ParamType

# A 64-bit signed integer: the widest a store keeps (a seq) and a sized
# container takes (`show --tail`'s buffer); anything above it is a typo.
MAX_WHOLE: Final = 2**63 - 1
# Past any real wait (about 31,700 years), and well inside what date
# arithmetic holds (a `datetime.timedelta` ends near 8.6e13 seconds).
MAX_SECONDS: Final = 10**12

# Plain decimal digits only: Python's own int() and float() also take "1_000",
# other scripts' digits, surrounding blanks and "nan", none of which a shell
# user means as a count.
_WHOLE: Final = re.compile(r"[+-]?[0-9]+")
_DECIMAL: Final = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NOT_FINITE: Final = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


class _Number(_ParamType):
    """What both kinds share: the failure, worded with the range and an example."""

    unit: str = ""

    def __init__(self, *, min_value: float, max_value: float, example: str) -> None:
        self.min_value = min_value
        self.max_value = max_value
        self.example = example

    def _reject(
        self, value: Any, problem: str, param: click.Parameter | None, ctx: click.Context | None
    ) -> Any:
        option = param.opts[0] if param is not None and param.opts else None
        such_as = f"{option} {self.example}" if option else self.example
        self.fail(
            f"{str(value)!r} {problem}.\n"
            f"hint: give {self.unit} from {self.min_value} to {self.max_value}, "
            f"such as {such_as}",
            param,
            ctx,
        )

    def _in_range(
        self,
        number: float,
        text: Any,
        param: click.Parameter | None,
        ctx: click.Context | None,
    ) -> None:
        if number < self.min_value:
            self._reject(text, f"is less than {self.min_value}", param, ctx)
        if number > self.max_value:
            self._reject(text, f"is more than {self.max_value}", param, ctx)


class WholeNumber(_Number):
    """A whole number in decimal digits, from `min_value` to `max_value`."""

    name = "integer"
    unit = "a whole number"

    def __init__(self, *, min_value: int, example: str, max_value: int = MAX_WHOLE) -> None:
        super().__init__(min_value=min_value, max_value=max_value, example=example)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            # A default, given as a number by the option itself.
            number = value
        else:
            text = str(value)
            if not _WHOLE.fullmatch(text):
                self._reject(value, "is not a whole number", param, ctx)
            digits = text.lstrip("+-").lstrip("0")
            # Compared by length first: int() refuses a string of thousands
            # of digits with an error of its own.
            if len(digits) > len(str(MAX_WHOLE)):
                side = "less" if text.startswith("-") else "more"
                bound = self.min_value if side == "less" else self.max_value
                self._reject(value, f"is {side} than {bound}", param, ctx)
            number = int(text)
        self._in_range(number, value, param, ctx)
        return number


class Seconds(_Number):
    """A finite number of seconds in decimal notation, from 0 to `MAX_SECONDS`.

    "nan" is refused by name: every comparison with it is false, so a check
    such as "modified less than N seconds ago" would silently never hold.
    """

    name = "seconds"
    unit = "a number of seconds"

    def __init__(self, *, example: str, max_value: int = MAX_SECONDS) -> None:
        super().__init__(min_value=0, max_value=max_value, example=example)

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
            if not math.isfinite(number):
                self._reject(value, "is not a finite number", param, ctx)
        else:
            text = str(value)
            if _NOT_FINITE.fullmatch(text):
                self._reject(value, "is not a finite number", param, ctx)
            if not _DECIMAL.fullmatch(text):
                self._reject(value, "is not a number of seconds", param, ctx)
            # Decimal digits always parse; an exponent past the float range
            # comes back as infinity, which the range check refuses.
            number = float(text)
        self._in_range(number, value, param, ctx)
        # "-0" is zero, without the sign.
        return number + 0.0
