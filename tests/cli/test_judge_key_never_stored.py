"""The judge API key is never written anywhere (issue 29): a model that echoes the key it was sent — as is,
reversed, base64'd or hex'd — has it redacted from the reply before the reply is kept (judge_calls) or shown;
the database, the log and the judgments export are searched for it afterwards."""

from __future__ import annotations

import base64
import json
import logging
from http.server import BaseHTTPRequestHandler

import sqlalchemy as sa

from annotator.cli import main
from annotator.judge_client import redact
from db.accounts.permissions import OPERATOR
from db.projects import add_guideline
from tests.fake_judge import FakeJudge, reply

KEY = "sk-test-9c8b7a6d5e4f3a2b1c0d9e8f7a6b5c4d"
DISGUISES = [KEY, KEY[::-1], base64.b64encode(KEY.encode()).decode().rstrip("="), KEY.encode().hex()]


def echo_key(h: BaseHTTPRequestHandler) -> None:
    """A chat completion that grades 1 and repeats the bearer token it was sent, in four disguises."""
    sent = h.headers.get("Authorization", "").removeprefix("Bearer ")
    raw = sent.encode()
    forms = [sent, sent[::-1], base64.b64encode(raw).decode(), raw.hex()]
    content = "Grade: 1\nYour credentials: " + " | ".join(forms)
    reply(h, 200, json.dumps({"choices": [{"message": {"content": content}}]}).encode())


def leaks(text: str) -> list[str]:
    return [d for d in DISGUISES if d in text]


def test_redact_removes_every_disguise():
    text = "a " + " b ".join(DISGUISES) + " c"
    assert leaks(redact(text, KEY)) == []
    assert redact("Grade: 2", KEY) == "Grade: 2" and redact("Grade: 2", None) == "Grade: 2"


def test_a_reply_echoing_the_key_is_stored_logged_and_exported_without_it(
    engine, store_url, queue, tmp_path, monkeypatch, capsys, caplog
):
    add_guideline(engine, "demo", "Grade 3 when the fragment answers the query.", actor=OPERATOR)
    monkeypatch.setenv("QRELKIT_JUDGE_API_KEY", KEY)
    server = FakeJudge(echo_key)
    try:
        with caplog.at_level(logging.DEBUG):
            args = ["prejudge", "--project", "demo", "--base-url", server.url, "--model", "m", "--limit", "3"]
            code = main([*args, "--db", store_url])
    finally:
        server.close()
    assert code == 0
    out = tmp_path / "judgments.jsonl"
    assert (
        main(["export", "--project", "demo", "--judgments", "--format", "jsonl", "-o", str(out), "--db", store_url])
        == 0
    )
    printed = capsys.readouterr()
    with engine.connect() as conn:
        answers = conn.execute(sa.text("SELECT answer FROM judge_calls")).scalars().all()
        everything = []
        for table in sa.inspect(conn).get_table_names():
            everything += [repr(tuple(row)) for row in conn.execute(sa.text(f'SELECT * FROM "{table}"'))]
    assert len(answers) == 3 and all("Your credentials: [" in a for a in answers)  # before: the key verbatim
    assert leaks("\n".join(everything)) == []
    assert leaks(printed.out + printed.err + caplog.text) == []
    assert leaks(out.read_text(encoding="utf-8")) == []
    if store_url.startswith("sqlite"):
        from pathlib import Path

        path = Path(store_url.removeprefix("sqlite:///"))
        for file in (path, path.with_name(path.name + "-wal")):
            if file.exists():
                data = file.read_bytes()
                assert not any(d.encode() in data for d in DISGUISES)
