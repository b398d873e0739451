"""PostgreSQL tenants as docs/stores.md sets them up, and secrets never printed."""

from __future__ import annotations

import itertools
import json
import os
import re

import pytest

import turnlog
from builders import crashed_session, put
from entry_point import cli
from paths import ROOT

psycopg = pytest.importorskip("psycopg")

from turnlog.stores.postgres import redact_dsn  # noqa: E402 - after the skip

DOCS = ROOT / "docs" / "stores.md"
_names = itertools.count()


def documented_grants() -> str:
    """The SQL block of docs/stores.md that sets up a tenant."""
    blocks = re.findall(r"```sql\n(.*?)```", DOCS.read_text(), re.DOTALL)
    (grants,) = [block for block in blocks if "GRANT" in block]
    return grants


def test_every_credential_form_libpq_accepts_is_redacted() -> None:
    for dsn in (
        "postgresql://u:hunter2@h:5432/db",
        "postgresql://u@h/db?password=hunter2",
        "postgresql://u@h/db?sslmode=require&password=hunter2",
        "postgresql://u@h/db?pass%77ord=hunter2",
        "postgresql://u@h/db?sslpassword=hunter2",
        "host=h user=u password=hunter2",
        "host=h user=u password = 'hun ter2' dbname=db",
    ):
        for schema in ("public", "tenant_a"):
            shown = redact_dsn(dsn, schema=schema)
            assert "hunter2" not in shown and "ter2" not in shown, shown
            assert "***" in shown
            assert shown.count("?") <= 1, shown
            assert (schema in shown) == (schema != "public")


def test_a_password_in_the_url_is_never_printed(postgres_url: str) -> None:
    secret = "hunter2-never-printed"
    url = f"{postgres_url}?password={secret}&schema=s{os.getpid()}_{next(_names)}"
    outputs = [cli("store", "init", url, "--json"), cli("store", "init", url)]
    store, _ = turnlog.open_store(url)
    put(store, crashed_session("s1"))
    outputs += [cli("ls", "--store", url, "--json"), cli("sweep", url, "--json")]
    for code, out, err in outputs:
        assert code == 0, err
        assert secret not in out + err
    document = json.loads(outputs[2][1])
    assert document["store"].count("?") == 1 and "password=***" in document["store"]
    # An error names the store, redacted, too: a server that is not there.
    code, out, err = cli(
        "ls", "--store", f"postgresql://u:{secret}@127.0.0.1:1/db?password={secret}"
    )
    assert code == 3 and secret not in out + err and "***" in err


def test_the_documented_grants_make_a_working_tenant_that_sees_only_its_own(
    postgres_url: str,
) -> None:
    schema = f"agents_{os.getpid()}_{next(_names)}"
    tenants = [f"tenant_a_{schema}", f"tenant_b_{schema}"]
    admin = f"{postgres_url}?schema={schema}"
    assert cli("store", "init", admin)[0] == 0
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        for tenant in tenants:
            grants = documented_grants().replace("agents", schema).replace("tenant_a", tenant)
            for statement in filter(str.strip, grants.split(";")):
                connection.execute(statement)
    base, _, _ = postgres_url.partition("?")
    host = base.split("@", 1)[1]
    urls = [
        f"postgresql://{tenant}@{host}?schema={schema}&password=change-me" for tenant in tenants
    ]
    store, _ = turnlog.open_store(urls[0])
    put(store, crashed_session("s1"))
    store.close()
    code, out, err = cli("ls", "--store", urls[0], "--json")
    assert code == 0, err
    assert [row["session_id"] for row in json.loads(out)["sessions"]] == ["s1"]
    assert "change-me" not in out + err
    # Another tenant, and the superuser, see none of it through turnlog.
    for other in (urls[1], admin):
        code, out, err = cli("ls", "--store", other, "--json")
        assert code == 0 and json.loads(out)["sessions"] == [], err
    # The tenant repairs its own crash.
    code, out, err = cli("sweep", urls[0], "--json")
    assert code == 0, err
    assert [item["action"] for item in json.loads(out)["sessions"]] == ["recovered"]


def test_read_only_commands_on_a_database_without_turnlog_create_nothing(
    postgres_url: str,
) -> None:
    schema = f"nothing_{os.getpid()}_{next(_names)}"
    url = f"{postgres_url}?schema={schema}"
    for command in (["ls", "--store", url], ["sweep", url], ["verify", "--store", url]):
        code, _, err = cli(*command)
        assert code == 2 and "no turnlog store" in err, (command, err)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        made = connection.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)
        ).fetchone()
    assert made is None
    assert cli("store", "init", url)[0] == 0
    assert cli("ls", "--store", url)[0] == 0
