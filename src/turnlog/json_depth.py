"""How deep a JSON text nests, counted without decoding it (the bound every writer keeps)."""

import re
from typing import Final

# Compiled on first use (`re` keeps them): most records never need the count.
_JSON_STRING: Final = rb'"(?:[^"\\]|\\.)*"'
_EMPTY_PAIR: Final = rb"\[\]|\{\}"
_NOT_BRACKETS: Final = bytes(set(range(256)) - set(b"[]{}"))


def nesting_exceeds(record: bytes | bytearray, limit: int) -> bool:
    """True when the JSON text nests deeper than `limit` levels.

    A record with fewer brackets than the limit cannot be deeper, so the
    common case costs two C-speed counts. Otherwise strings are cut out and
    innermost bracket pairs are removed a level per pass, at most `limit` passes.
    """
    if record.count(b"[") + record.count(b"{") <= limit:
        return False
    json_string = re.compile(_JSON_STRING, re.DOTALL)
    empty_pair = re.compile(_EMPTY_PAIR)
    brackets = json_string.sub(b"", bytes(record)).translate(None, _NOT_BRACKETS)
    for _ in range(limit):
        brackets, removed = empty_pair.subn(b"", brackets)
        if not brackets:
            return False
        if not removed:
            return False  # unbalanced: not ours to judge, the decoder will say
    return bool(brackets)
