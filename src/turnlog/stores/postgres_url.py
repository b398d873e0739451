"""PostgreSQL store URLs: turnlog's `schema` parameter split off, and every secret redacted
before a URL is shown."""

from __future__ import annotations

import re
import urllib.parse
from typing import Final

# A schema name turnlog creates and quotes: lower case, as PostgreSQL folds it.
SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")

# The connection parameters libpq takes that hold a secret.
_SECRET_KEYS: Final = frozenset({"password", "sslpassword"})
_SECRET_PAIR: Final = re.compile(
    r"""(?P<key>\b(?:password|sslpassword))\s*=\s*(?:'(?:[^'\\]|\\.)*'|\S*)""", re.IGNORECASE
)


def redact_dsn(dsn: str, *, schema: str = "public") -> str:
    """The connection string as it may be shown: every secret libpq accepts
    (a URL's `user:password@`, `?password=` and `?sslpassword=` in its query,
    `password=` in the key=value form) replaced by `***`, and a schema other
    than `public` added to the query. Nothing else ever prints a DSN."""
    if "://" not in dsn:
        shown = _SECRET_PAIR.sub(lambda m: f"{m.group('key')}=***", dsn)
        return shown + ("" if schema == "public" else f" schema={schema}")
    base, _, query = dsn.partition("?")
    scheme, _, rest = base.partition("://")
    authority, slash, path = rest.partition("/")
    userinfo, at, hostport = authority.rpartition("@")
    if at and ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    items = []
    for item in filter(None, query.split("&")):
        key, equals, _ = item.partition("=")
        secret = urllib.parse.unquote(key).strip().lower() in _SECRET_KEYS
        items.append(f"{key}=***" if equals and secret else item)
    if schema != "public":
        items.append(f"schema={schema}")
    shown = f"{scheme}://{userinfo}{at}{hostport}{slash}{path}"
    return shown + ("?" + "&".join(items) if items else "")


def split_url(url: str) -> tuple[str, str]:
    """(the DSN for libpq, the schema): `schema` is turnlog's own query
    parameter and is taken out; everything else is left as it is."""
    base, _, query = url.partition("?")
    schema = "public"
    rest = []
    for item in filter(None, query.split("&")):
        key, _, value = item.partition("=")
        if key == "schema":
            schema = value
        else:
            rest.append(item)
    return base + ("?" + "&".join(rest) if rest else ""), schema
