"""Model judges: `qrelkit prejudge` against a local chat-completions server (the test double of vLLM, llama.cpp,
Ollama or a hosted API), the strict grade parser, retries and back-off, the cache, the API key kept out of the
store and the logs, a Python callable as judge, and `import judgments --annotator-kind model` — on SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import sqlalchemy as sa

from annotator.app.text import BREAK
from annotator.bounded_http import retry_after
from annotator.cli import main
from annotator.judge_client import ChatJudge, EndpointError
from annotator.judge_run import prejudge
from db.accounts.permissions import OPERATOR
from db.assignment import assign
from db.model_judges import model_annotator
from db.projects import add_guideline
from db.store.frames import judgments_frame
from db.store.models import JudgeCall, JudgmentHistory, User
from eval_core.judges.prompt import check_template, parse_grade, prompt_version, render
from guidelines import JUDGE_PROMPT
from tests.fake_judge import start

GUIDELINE = "Grade 3 when the fragment answers the query fully, 0 when it is about something else."
LABELS = {0: "Not relevant", 1: "Related", 2: "Partly", 3: "Fully"}
PAIRS = [(f"q{q}", f"f{f}") for q in range(1, 4) for f in range(1, 5)]


# --- the local chat-completions server ------------------------------------------------------------------------


class ChatServer:
    """POST /v1/chat/completions on 127.0.0.1 (random port). `script[(query, fragment)]` is a list of replies
    used one per request (the last one repeats): ("answer", text), ("status", code, headers, body) or
    ("slow", seconds, text). Every request is recorded with its headers and JSON body."""

    def __init__(self) -> None:
        self.script: dict[tuple[str, str], list[tuple]] = {}
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                pair = (
                    re.search(r"=== QUERY(?: \w+)? ===\n(.*?)\n=== END OF QUERY(?: \w+)? ===", prompt, re.S)
                    .group(1)
                    .replace("query ", "q"),
                    re.search(r"(fragment \d+)\n=== END OF FRAGMENT(?: \w+)? ===", prompt)
                    .group(1)
                    .replace("fragment ", "f"),
                )
                with server.lock:
                    server.requests.append(
                        {"path": self.path, "pair": pair, "body": body, "headers": dict(self.headers)}
                    )
                    replies = server.script.get(pair, [("answer", "Grade: 0")])
                    reply = replies.pop(0) if len(replies) > 1 else replies[0]
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    self.reply(reply, body)
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def reply(self, reply: tuple, body: dict) -> None:
                if reply[0] == "status":
                    _, code, headers, text = reply
                    self.send_response(code)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    data = text.encode()
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if reply[0] == "slow":
                    time.sleep(reply[1])
                text = reply[-1]
                data = json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
                    }
                )
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

            def log_message(self, *args) -> None:
                pass

        self.httpd, self.base_url = start(Handler)

    def calls(self, pair: tuple[str, str] | None = None) -> int:
        with self.lock:
            return sum(1 for r in self.requests if pair is None or r["pair"] == pair)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    chat = ChatServer()
    yield chat
    chat.close()


@pytest.fixture
def judged_project(engine, queue):
    """The `queue` project with a guideline in force, grade labels as LABELS, and one human grade with a note."""
    from db.grading import record_judgment
    from db.projects import set_grade_labels

    add_guideline(engine, "demo", GUIDELINE, actor=OPERATOR)
    set_grade_labels(engine, "demo", LABELS, actor=OPERATOR)
    record_judgment(engine, queue[("q1", "f1")], "ann1", 3, note="HUMAN-NOTE-never-shown-to-a-model")
    return queue


def _judge(server: ChatServer, waits: list[float] | None = None, **kw) -> ChatJudge:
    template = JUDGE_PROMPT.read_text(encoding="utf-8")
    return ChatJudge(
        server.base_url, "test-model", template, LABELS, sleep=(waits.append if waits is not None else time.sleep), **kw
    )


def _model_grades(engine, annotator: str = "test-model") -> dict[tuple[str, str], int]:
    frame = judgments_frame(engine, "demo")
    mine = frame[frame["annotator"] == annotator]
    return {(q, f): int(g) for q, f, g in mine[["query_id", "fragment_id", "grade"]].itertuples(index=False)}


# --- parsing and prompt (pure) --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ("Grade: 2", 2),
        ("The fragment gives the deadline.\nGrade: 3", 3),
        ("**Grade:** 1", 1),
        ("Final grade: 0.", 0),
        ("grade = 2", 2),
        ("2", 2),
        ("<think>Grade: 1? no</think>\nGrade: 3", 3),
        ("  Score: 1  ", 1),
    ],
)
def test_parse_grade_accepts_exactly_one_final_grade(answer, grade):
    assert parse_grade(answer, (0, 3)) == grade


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("I would say 2 or 3.", "no 'Grade: N' line"),
        ("", "no 'Grade: N' line"),
        ("Grade: 1\nGrade: 1", "2 grade lines"),
        ("Grade: 2\nFinal grade: 3", "2 grade lines"),
        ("Grade: 2.5", "not an integer"),
        ("Grade: two", "not an integer"),
        ("Grade: 2-3", "not an integer"),
        ("Grade: 4", "outside the scale 0-3"),
        ("Grade: -1", "outside the scale 0-3"),
        ("2\n3", "no 'Grade: N' line"),
    ],
)
def test_parse_grade_refuses_anything_else(answer, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        parse_grade(answer, (0, 3))


def test_prompt_holds_guideline_query_fragment_and_scale_only():
    template = "G:{{guideline}}|Q:{{query}}|F:{{fragment}}|S:{{grades}}|{{min}}-{{max}}"
    text = render(template, "what is {{fragment}}?", "frag", " the rule ", {1: "a", 2: "b"})
    assert text == "G:the rule|Q:what is {{fragment}}?|F:frag|S:2 = b\n1 = a|1-2"  # one pass: no re-substitution
    assert prompt_version(template) != prompt_version(template + " ")
    with pytest.raises(ValueError, match=r"unknown placeholder\(s\) \{\{grade\}\}"):
        check_template("{{guideline}} {{query}} {{fragment}} {{grade}}")
    with pytest.raises(ValueError, match=r"must contain \{\{fragment\}\}"):
        check_template("{{guideline}} {{query}}")
    check_template(JUDGE_PROMPT.read_text(encoding="utf-8"))


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after("2") == 2.0
    assert retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now=datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)) == 30.0
    assert retry_after(None) is None and retry_after("soon") is None


# --- prejudge against the server ------------------------------------------------------------------------------


def test_prejudge_grades_refuses_malformed_and_retries(engine, judged_project, server):
    expected = {p: (int(p[0][1]) + int(p[1][1])) % 4 for p in PAIRS}  # hand rule: (query + fragment) mod 4
    for pair, grade in expected.items():
        server.script[pair] = [("answer", f"The fragment is on topic.\nGrade: {grade}")]
    malformed = {("q2", "f2"): "It is 2 or maybe 3.", ("q2", "f3"): "Grade: 5", ("q3", "f1"): "Grade: 1\nGrade: 2"}
    for pair, text in malformed.items():
        server.script[pair] = [("answer", text)]
    server.script[("q1", "f1")] = [("status", 429, {"Retry-After": "2"}, "slow down"), server.script[("q1", "f1")][0]]
    server.script[("q1", "f2")] = [
        ("status", 500, {}, "oops"),
        ("status", 503, {}, "busy"),
        server.script[("q1", "f2")][0],
    ]
    server.script[("q1", "f3")] = [("slow", 1.0, "Grade: 3"), server.script[("q1", "f3")][0]]
    waits: list[float] = []
    report = prejudge(
        engine,
        "demo",
        _judge(server, waits, timeout=0.6),
        model="test-model",
        prompt_version="v-test",
        concurrency=3,
        actor=OPERATOR,
    )  # a pair's budget: 5 × 0.6 = 3 s

    assert (report.pairs, report.cached, report.malformed, report.failed) == (12, 0, 3, 0)
    assert (report.created, report.updated, report.unchanged) == (9, 0, 0)
    assert server.calls() == 12 + 1 + 2 + 1  # one 429, two 5xx and one timeout retried
    assert report.called == server.calls()  # calls are what the endpoint received, retries included
    assert (server.calls(("q1", "f1")), server.calls(("q1", "f2")), server.calls(("q1", "f3"))) == (2, 3, 2)
    assert 2.0 in waits  # Retry-After honoured as given
    backoffs = sorted(w for w in waits if w != 2.0)  # step 0.5·2^k s, waited as half of it plus jitter up to all
    assert len(backoffs) == 3 and 0.25 <= backoffs[0] <= backoffs[1] <= 0.5 <= backoffs[2] <= 1.0
    assert (report.prompt_tokens, report.completion_tokens) == (12 * 100, 12 * 7)  # every 200 answer's usage
    assert sorted(p.split(": ")[0] for p in report.problems) == ["pair q2/f2", "pair q2/f3", "pair q3/f1"]

    good = {p: g for p, g in expected.items() if p not in malformed}
    assert _model_grades(engine) == good
    frame = judgments_frame(engine, "demo")
    model_rows = frame[frame["annotator"] == "test-model"]
    assert set(model_rows["annotator_kind"]) == {"model"} and set(model_rows["guideline"]) == {"1"}
    assert frame.loc[frame["annotator"] == "ann1", "annotator_kind"].tolist() == ["human"]
    with engine.connect() as conn:
        user = conn.execute(
            sa.select(User.kind, User.model_name, User.prompt_version, User.model_params, User.password_hash).where(
                User.username == "test-model"
            )
        ).one()
        history = conn.execute(
            sa.select(JudgmentHistory.prompt_version, JudgmentHistory.new_grade)
            .join(User, User.id == JudgmentHistory.user_id)
            .where(User.username == "test-model")
        ).all()
    assert tuple(user) == ("model", "test-model", "v-test", {"temperature": 0.0}, None)
    assert sorted(g for _, g in history) == sorted(good.values()) and {v for v, _ in history} == {"v-test"}

    # the prompt is the template with only the guideline, query and fragment in it: no other annotator's work
    template = JUDGE_PROMPT.read_text(encoding="utf-8")
    for request in server.requests:
        q, f = request["pair"]
        assert request["path"] == "/v1/chat/completions" and request["body"]["model"] == "test-model"
        boundary = re.search(r"=== QUERY (\w+) ===", request["body"]["messages"][0]["content"]).group(1)
        assert request["body"]["messages"] == [
            {
                "role": "user",
                "content": render(
                    template, f"query {q[1]}", f"T{f[1]}\n\nfragment {f[1]}", GUIDELINE, LABELS, boundary
                ),
            }
        ]
        assert "HUMAN-NOTE" not in json.dumps(request["body"]) and "ann1" not in json.dumps(request["body"])


def test_concurrency_is_bounded(engine, judged_project, server):
    for pair in PAIRS:
        server.script[pair] = [("slow", 0.15, "Grade: 1")]
    report = prejudge(engine, "demo", _judge(server), model="test-model", concurrency=3, actor=OPERATOR)
    assert (report.called, report.created) == (12, 12)
    assert server.most_in_flight == 3  # three calls at a time, never more


def test_second_run_calls_only_what_the_cache_lacks(engine, judged_project, server):
    for pair in PAIRS:
        server.script[pair] = [("answer", "Grade: 2")]
    server.script[("q3", "f4")] = [("answer", "no idea")]
    first = prejudge(engine, "demo", _judge(server), model="test-model", prompt_version="v1", actor=OPERATOR)
    assert (first.called, first.malformed, first.created) == (12, 1, 11)
    assert server.calls() == 12

    second = prejudge(engine, "demo", _judge(server), model="test-model", prompt_version="v1", actor=OPERATOR)
    assert server.calls() == 13 and server.calls(("q3", "f4")) == 2  # only the refused answer is asked again
    assert (second.cached, second.called, second.unchanged, second.created) == (11, 1, 11, 0)
    assert (second.prompt_tokens, second.completion_tokens) == (100, 7)

    server.script[("q3", "f4")] = [("answer", "Grade: 1")]
    third = prejudge(engine, "demo", _judge(server), model="test-model", prompt_version="v1", actor=OPERATOR)
    assert (third.called, third.created, server.calls()) == (1, 1, 14)
    assert prejudge(engine, "demo", _judge(server), model="test-model", prompt_version="v1", actor=OPERATOR).called == 0
    assert server.calls() == 14

    # a new prompt version, or a changed guideline, is a new question: everything is asked again
    new_prompt = prejudge(
        engine, "demo", _judge(server), model="test-model", prompt_version="v2", limit=2, actor=OPERATOR
    )
    assert (new_prompt.pairs, new_prompt.called, new_prompt.updated) == (2, 2, 2)  # same grades, new stamp
    add_guideline(engine, "demo", GUIDELINE + " Be strict.", actor=OPERATOR)
    assert (
        prejudge(
            engine, "demo", _judge(server), model="test-model", prompt_version="v2", limit=2, actor=OPERATOR
        ).called
        == 2
    )
    assert server.calls() == 18
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(JudgeCall)).scalar_one() == 12 + 2 + 2


def test_stamp_changes_are_updates_with_history(engine, judged_project, server):
    for pair in PAIRS:
        server.script[pair] = [("answer", "Grade: 2")]
    prejudge(engine, "demo", _judge(server), model="test-model", prompt_version="v1", limit=1, actor=OPERATOR)
    report = prejudge(engine, "demo", _judge(server), model="test-model", prompt_version="v2", limit=1, actor=OPERATOR)
    assert (report.created, report.updated) == (0, 1)  # same grade, another prompt: a new revision
    with engine.connect() as conn:
        rows = (
            conn.execute(
                sa.select(JudgmentHistory.prompt_version)
                .join(User, User.id == JudgmentHistory.user_id)
                .where(User.username == "test-model")
                .order_by(JudgmentHistory.id)
            )
            .scalars()
            .all()
        )
    assert rows == ["v1", "v2"]


def test_endpoint_refusals_stop_the_run(engine, judged_project, server):
    for pair in PAIRS:
        server.script[pair] = [("status", 404, {}, '{"error": "model not found"}')]
    with pytest.raises(EndpointError, match=r"HTTP 404: .*model not found"):
        prejudge(engine, "demo", _judge(server), model="test-model", concurrency=2, actor=OPERATOR)
    assert server.calls() <= 2 and _model_grades(engine) == {}

    server.script.clear()
    for pair in PAIRS:
        server.script[pair] = [("status", 500, {}, "down")]
    waits: list[float] = []
    report = prejudge(engine, "demo", _judge(server, waits, attempts=3), model="test-model", limit=2, actor=OPERATOR)
    assert (report.failed, report.created, len(waits)) == (2, 0, 4)  # 3 tries each, 2 waits between them
    assert all("HTTP 500 after 3 attempt(s)" in p for p in report.problems)


def test_retry_after_beyond_the_cap_fails_the_pair(engine, judged_project, server):
    for pair in PAIRS:
        server.script[pair] = [("status", 429, {"Retry-After": "86400"}, "")]
    waits: list[float] = []
    report = prejudge(engine, "demo", _judge(server, waits), model="test-model", limit=1, actor=OPERATOR)
    assert (report.failed, waits, server.calls()) == (1, [], 1)


# --- the API key ----------------------------------------------------------------------------------------------


def _everything_stored(engine) -> str:
    """Every row of every table, as text."""
    from sqlmodel import SQLModel

    with engine.connect() as conn:
        return "\n".join(
            repr(row) for table in SQLModel.metadata.sorted_tables for row in conn.execute(sa.select(table)).all()
        )


def test_api_key_reaches_the_endpoint_only(
    engine, store_url, judged_project, server, monkeypatch, capsys, caplog, tmp_path
):
    key = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("QRELKIT_JUDGE_API_KEY", key)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-this-one")
    for pair in PAIRS:
        server.script[pair] = [("answer", "Grade: 1")]
    server.script[("q2", "f2")] = [("answer", "no grade here")]
    caplog.set_level(logging.DEBUG)
    assert (
        main(
            [
                "prejudge",
                "--project",
                "demo",
                "--base-url",
                server.base_url,
                "--model",
                "test-model",
                "--db",
                store_url,
                "--concurrency",
                "2",
                "--format",
                "json",
            ]
        )
        == 1
    )  # q2/f2 got no grade
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert (report["called"], report["created"], report["malformed"]) == (12, 11, 1)
    assert report["prompt_version"] == prompt_version(JUDGE_PROMPT.read_text(encoding="utf-8"))
    assert "11 from" not in out.err and "12 call(s)" in out.err and "tokens" in out.err
    assert {r["headers"].get("Authorization") for r in server.requests} == {f"Bearer {key}"}

    # a refusal that echoes the key back (as some APIs do) is reported without it
    for pair in PAIRS:
        server.script[pair] = [("status", 401, {}, f"invalid key {key}")]
    assert (
        main(
            [
                "prejudge",
                "--project",
                "demo",
                "--base-url",
                server.base_url,
                "--model",
                "other-model",
                "--db",
                store_url,
            ]
        )
        == 2
    )
    refused = capsys.readouterr()
    assert "HTTP 401: the API key was refused" in refused.err

    captured = out.out + out.err + refused.out + refused.err + caplog.text
    assert "pair q2/f2" in caplog.text  # the logs were captured, and hold no key
    assert key not in captured and key not in _everything_stored(engine)
    if store_url.startswith("sqlite"):
        path = store_url.removeprefix("sqlite:///")
        engine.dispose()
        for suffix in ("", "-wal", "-shm"):
            file = Path(path + suffix)
            assert not file.exists() or key.encode() not in file.read_bytes()
    export = tmp_path / "judgments.jsonl"
    assert (
        main(["export", "--project", "demo", "--judgments", "--format", "jsonl", "-o", str(export), "--db", store_url])
        == 0
    )
    assert key not in export.read_text(encoding="utf-8") and "test-model" in export.read_text(encoding="utf-8")


def test_cli_prints_a_readable_summary_and_the_json_report_on_request(store_url, judged_project, server, capsys):
    # 12 pairs, q3/f4 answers no grade: 11 graded; one call each (nothing cached on a first run)
    server.script[("q3", "f4")] = [("answer", "I cannot tell")]
    assert (
        main(
            ["prejudge", "--project", "demo", "--base-url", server.base_url, "--model", "test-model", "--db", store_url]
        )
        == 1
    )
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "model: test-model" in lines and "account: test-model" in lines
    assert "pairs graded: 11 of 12 (11 new, 0 changed, 0 unchanged)" in lines
    assert "calls: 12 (0 answer(s) from the cache)" in lines
    assert "malformed: 1" in lines and "failed: 0" in lines
    assert any(re.fullmatch(r"time: \d+\.\d s", line) for line in lines)
    assert any(line.strip().startswith("- pair q3/f4: answer refused") for line in lines)
    assert not out.lstrip().startswith("{")

    # a second run: every graded pair comes from the cache; JSON keeps the report's keys
    assert (
        main(
            [
                "prejudge",
                "--project",
                "demo",
                "--base-url",
                server.base_url,
                "--model",
                "test-model",
                "--db",
                store_url,
                "--format",
                "json",
            ]
        )
        == 1
    )
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {
        "project",
        "annotator",
        "model",
        "prompt_version",
        "guideline",
        "pairs",
        "called",
        "cached",
        "created",
        "updated",
        "unchanged",
        "malformed",
        "failed",
        "prompt_tokens",
        "completion_tokens",
        "seconds",
        "problems",
        "without_text",
        "total_tokens",
        "prompt",
    }
    assert (report["pairs"], report["cached"], report["called"], report["unchanged"]) == (12, 11, 1, 11)


def test_cli_refuses_a_bad_prompt_file(store_url, judged_project, server, tmp_path, capsys):
    bad = tmp_path / "prompt.md"
    bad.write_text("Judge {{query}} against {{fragment}}.", encoding="utf-8")
    assert (
        main(
            [
                "prejudge",
                "--project",
                "demo",
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "--prompt",
                str(bad),
                "--db",
                store_url,
            ]
        )
        == 2
    )
    assert f"{bad}: the prompt must contain {{{{guideline}}}}" in capsys.readouterr().err
    assert server.calls() == 0


def test_cli_custom_prompt_is_the_stamped_version(engine, store_url, judged_project, server, tmp_path, capsys):
    prompt = tmp_path / "prompt.md"
    text = (
        "Rules:\n{{guideline}}\n=== QUERY ===\n{{query}}\n=== END OF QUERY ===\n{{fragment}}\n"
        "=== END OF FRAGMENT ===\nAnswer 'Grade: N'."
    )
    prompt.write_text(text, encoding="utf-8")
    server.script[("q1", "f1")] = [("answer", "Grade: 3")]
    assert (
        main(
            [
                "prejudge",
                "--project",
                "demo",
                "--base-url",
                server.base_url + "/",
                "--model",
                "m",
                "--annotator",
                "judge-a",
                "--prompt",
                str(prompt),
                "--limit",
                "1",
                "--db",
                store_url,
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["prompt_version"] == prompt_version(text)
    assert server.requests[0]["body"]["messages"][0]["content"].startswith(f"Rules:\n{GUIDELINE}\n")
    assert _model_grades(engine, "judge-a") == {("q1", "f1"): 3}
    with engine.connect() as conn:
        assert conn.execute(sa.select(User.model_name).where(User.username == "judge-a")).scalar_one() == "m"


# --- a Python callable as judge -------------------------------------------------------------------------------


def test_callable_judge(engine, judged_project):
    seen: list[tuple[str, str, str]] = []

    def judge(query: str, fragment: str, guideline: str):
        seen.append((query, fragment, guideline))
        f = int(fragment[-1])
        return {1: 3, 2: 0, 3: "2", 4: 7}[f]  # f3 answers a string, f4 a grade off the scale: both refused

    report = prejudge(engine, "demo", judge, model="keyword-judge", concurrency=2, actor=OPERATOR)
    assert (report.called, report.created, report.malformed) == (12, 6, 6)
    assert sorted(seen) == sorted((f"query {q[1]}", f"T{f[1]}\n\nfragment {f[1]}", GUIDELINE) for q, f in PAIRS)
    assert _model_grades(engine, "keyword-judge") == {
        (q, f): {"f1": 3, "f2": 0}[f] for q, f in PAIRS if f in ("f1", "f2")
    }
    again = prejudge(engine, "demo", judge, model="keyword-judge", actor=OPERATOR)
    assert (again.cached, again.called) == (6, 6) and len(seen) == 18  # only the refused pairs are asked again


def test_model_names_never_mix_with_people(engine, judged_project):
    with pytest.raises(ValueError, match="'ann1' is a human annotator"):
        prejudge(engine, "demo", lambda q, f, g: 1, model="m", annotator="ann1", actor=OPERATOR)
    model_annotator(engine, "judge-x", "model-a", actor=OPERATOR)
    with pytest.raises(ValueError, match="'judge-x' is model 'model-a', not 'model-b'"):
        model_annotator(engine, "judge-x", "model-b", actor=OPERATOR)
    with pytest.raises(PermissionError):
        prejudge(engine, "demo", lambda q, f, g: 1, model="m", actor="ann2")
    with engine.begin() as conn, pytest.raises(sa.exc.IntegrityError):  # the database refuses it too
        conn.execute(sa.update(User).where(User.username == "ann2").values(model_name="gpt"))
    with engine.begin() as conn, pytest.raises(sa.exc.IntegrityError):
        conn.execute(sa.update(User).where(User.username == "ann2").values(kind="robot"))


def test_assign_gives_model_judges_no_queue(engine, judged_project):
    from db.accounts.users import set_password

    model_annotator(engine, "judge-x", "model-a", actor=OPERATOR)
    for name in ("ann1", "ann2"):  # the default assigns only people who can log in
        set_password(engine, name, "a long password 1", actor=OPERATOR)
    report = assign(engine, "demo", actor=OPERATOR)
    with engine.connect() as conn:
        queued = set(
            conn.execute(
                sa.text("SELECT DISTINCT u.username FROM assignments a JOIN users u ON u.id = a.user_id")
            ).scalars()
        )
    assert "judge-x" not in queued and report is not None
    with pytest.raises(ValueError, match="model judge"):
        assign(engine, "demo", annotators=["ann1", "judge-x"], actor=OPERATOR)


def test_prejudge_needs_a_guideline(engine, queue):
    with pytest.raises(ValueError, match="has no guideline"):
        prejudge(engine, "demo", lambda q, f, g: 1, model="m", actor=OPERATOR)


# --- import judgments --annotator-kind model ------------------------------------------------------------------


def _write_lines(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_import_model_judgments(engine, store_url, judged_project, tmp_path, capsys):
    grades = {("q1", "f1"): 3, ("q1", "f2"): 0, ("q2", "f1"): 2}
    path = _write_lines(
        tmp_path / "umbrela.jsonl",
        [{"query_id": q, "fragment_id": f, "grade": g, "annotator": "umbrela"} for (q, f), g in grades.items()],
    )
    assert (
        main(
            [
                "import",
                "judgments",
                path,
                "--project",
                "demo",
                "--annotator-kind",
                "model",
                "--model",
                "gpt-4o",
                "--prompt-version",
                "umbrela-v1",
                "--db",
                store_url,
                "--report-format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["created"] == 3
    assert _model_grades(engine, "umbrela") == grades
    frame = judgments_frame(engine, "demo")
    assert dict(zip(frame["annotator"], frame["annotator_kind"], strict=True)) == {"ann1": "human", "umbrela": "model"}
    with engine.connect() as conn:
        user = conn.execute(
            sa.select(User.kind, User.model_name, User.prompt_version, User.password_hash).where(
                User.username == "umbrela"
            )
        ).one()
        stamps = set(
            conn.execute(
                sa.text(
                    "SELECT j.prompt_version FROM judgments j JOIN users u ON u.id = j.user_id "
                    "WHERE u.username = 'umbrela'"
                )
            ).scalars()
        )
    assert tuple(user) == ("model", "gpt-4o", "umbrela-v1", None) and stamps == {"umbrela-v1"}


def test_import_refuses_to_mix_kinds_all_or_nothing(engine, store_url, judged_project, tmp_path, capsys):
    model_annotator(engine, "umbrela", "gpt-4o", actor=OPERATOR)
    before = len(judgments_frame(engine, "demo"))
    mixed = _write_lines(
        tmp_path / "mixed.jsonl",
        [
            {"query_id": "q1", "fragment_id": "f2", "grade": 1, "annotator": "llm-new"},
            {"query_id": "q1", "fragment_id": "f3", "grade": 2, "annotator": "ann1"},
        ],
    )
    assert (
        main(["import", "judgments", mixed, "--project", "demo", "--annotator-kind", "model", "--db", store_url]) == 2
    )
    assert (
        f"{mixed}:2: annotator 'ann1' is a human annotator in the store; it cannot be imported as model"
        in capsys.readouterr().err
    )
    people = _write_lines(
        tmp_path / "people.jsonl",
        [
            {"query_id": "q1", "fragment_id": "f2", "grade": 1, "annotator": "ann2"},
            {"query_id": "q1", "fragment_id": "f3", "grade": 2, "annotator": "umbrela"},
        ],
    )
    assert main(["import", "judgments", people, "--project", "demo", "--db", store_url]) == 2
    assert f"{people}:2: annotator 'umbrela' is a model annotator in the store" in capsys.readouterr().err
    other = _write_lines(
        tmp_path / "other.jsonl", [{"query_id": "q1", "fragment_id": "f2", "grade": 1, "annotator": "umbrela"}]
    )
    assert (
        main(
            [
                "import",
                "judgments",
                other,
                "--project",
                "demo",
                "--annotator-kind",
                "model",
                "--model",
                "llama-3",
                "--db",
                store_url,
            ]
        )
        == 2
    )
    assert f"{other}:1: model judge 'umbrela' is model 'gpt-4o' in the store, not 'llama-3'" in capsys.readouterr().err
    assert len(judgments_frame(engine, "demo")) == before  # nothing written, not even the valid lines
    with engine.connect() as conn:
        assert conn.execute(sa.select(User.id).where(User.username == "llm-new")).first() is None
    assert main(["import", "judgments", other, "--project", "demo", "--model", "x", "--db", store_url]) == 2
    assert "belong to model judges" in capsys.readouterr().err


# --- migration ------------------------------------------------------------------------------------------------


def test_migration_0006_makes_existing_users_human(empty_store_url):
    from alembic import command

    from db.store.engine import get_engine
    from db.store.schema import alembic_config, upgrade

    engine = get_engine(empty_store_url)
    assert upgrade(engine, "0005") == "0005"
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO users (id, username, role, active, created_at) "
            "VALUES (1, 'old', 'annotator', true, '2026-01-02 03:04:05')"
        )
    assert upgrade(engine, "0006") == "0006"
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT kind, model_name FROM users")).one() == ("human", None)
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.exec_driver_sql("UPDATE users SET kind = 'robot'")
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.exec_driver_sql("UPDATE users SET prompt_version = 'v1'")  # model fields on a person
    config = alembic_config()
    with engine.begin() as conn:  # and back down
        config.attributes["connection"] = conn
        command.downgrade(config, "0005")
    with engine.connect() as conn:
        assert "kind" not in {c["name"] for c in sa.inspect(conn).get_columns("users")}
    engine.dispose()
    get_engine.cache_clear()


# --- the app: the Judges page (grading with a model) and the Project page (importing a model's grades) ----------


def _project_page(engine, store_url, monkeypatch, page: str = "lead_project.py"):
    """A lead page (the Project page unless told) run by AppTest with lead `boss` logged in on project demo."""
    from streamlit.testing.v1 import AppTest

    from annotator.app.auth import TOKEN_KEY
    from db.accounts.sessions import create_session
    from db.accounts.users import get_user
    from tests.conftest import ROOT

    monkeypatch.setenv("QRELKIT_DB_URL", store_url)
    at = AppTest.from_file(str(ROOT / "annotator" / "app" / "screens" / page), default_timeout=60)
    at.session_state[TOKEN_KEY] = create_session(engine, get_user(engine, "boss").id, client="apptest").token
    at.session_state["project"] = "demo"
    return at.run()


def _by_label(elements, label: str):
    return next(e for e in elements if e.label == label)


def test_app_grades_with_a_model_judge(engine, store_url, judged_project, server, monkeypatch):
    key = f"sk-app-{uuid.uuid4().hex}"
    monkeypatch.setenv("QRELKIT_JUDGE_API_KEY", key)
    for pair in PAIRS:
        server.script[pair] = [("answer", "Grade: 2")]
    server.script[("q1", "f2")] = [("answer", "<b>maybe</b>")]
    at = _project_page(engine, store_url, monkeypatch, "lead_judges.py")
    assert not at.exception
    assert "No model judge yet" in " ".join(i.value for i in at.info)
    assert "API key: from QRELKIT_JUDGE_API_KEY." in " ".join(c.value for c in at.caption)
    _by_label(at.text_input, "Endpoint base URL").set_value(server.base_url)
    _by_label(at.text_input, "Model").set_value("test-model")
    _by_label(at.number_input, "First N pairs (0 = every pair)").set_value(4)
    at = _by_label(at.button, "Grade with the model").click().run()
    assert not at.exception and not at.error
    assert (
        "4 pair(s) in" in at.success[0].value
        and "4 call(s), 0 from the cache, 3 grade(s) written, 1 malformed, 0 failed, 428 tokens." in at.success[0].value
    )  # 4 answers × (100 + 7) tokens
    assert next(d.value for d in at.dataframe if "Problem" in d.value.columns)["Problem"].tolist() == [
        "pair q1/f2: answer refused: no 'Grade: N' line in the answer"
    ]
    assert _model_grades(engine) == {("q1", "f1"): 2, ("q1", "f3"): 2, ("q1", "f4"): 2}
    assert {r["headers"].get("Authorization") for r in server.requests} == {f"Bearer {key}"}
    page_text = json.dumps([str(e.value) for e in at.main if hasattr(e, "value")], default=str)
    assert key not in page_text
    # The same page run, no reload: the judge the run created is listed with its 3 grades.
    listed = next(d.value for d in at.dataframe if "Model judge" in d.value.columns)
    assert listed[["Model judge", "Grades in this project"]].values.tolist() == [["test-model", 3]]
    assert "No model judge yet" not in " ".join(i.value for i in at.info)

    at = _project_page(engine, store_url, monkeypatch, "lead_judges.py")  # the judge is listed
    judges = next(d.value for d in at.dataframe if "Model judge" in d.value.columns)
    assert judges.to_dict("records") == [
        {
            "Model judge": "test-model",
            "Model": "test-model",
            "Prompt version": prompt_version(JUDGE_PROMPT.read_text("utf-8"))[:12],
            "Parameters": "temperature=0.0",
            "Grades in this project": 3,
            "Probes (qrelkit judge-probe)": "not probed",
        }
    ]
    at = _project_page(engine, store_url, monkeypatch)  # and gets no queue
    assert _by_label(at.multiselect, "Annotators").options == ["ann1", "ann2"]


def test_app_reports_an_unreachable_endpoint(engine, store_url, judged_project, monkeypatch):
    at = _project_page(engine, store_url, monkeypatch, "lead_judges.py")
    _by_label(at.text_input, "Endpoint base URL").set_value("ftp://example.invalid")
    _by_label(at.text_input, "Model").set_value("m")
    at = _by_label(at.button, "Grade with the model").click().run()
    assert not at.exception
    shown = re.sub(r"\\(.)", r"\1", at.error[0].value.replace(BREAK, ""))  # what the browser shows
    assert shown == "Stopped: base URL must start with http:// or https://, got 'ftp://example.invalid'"
    assert _model_grades(engine, "m") == {}


def test_app_imports_a_models_grades_as_model_judges(engine, store_url, judged_project, monkeypatch):
    at = _project_page(engine, store_url, monkeypatch)
    _by_label(at.radio, "What").set_value("judgments").run()
    _by_label(at.radio, "The file's annotators are").set_value("model").run()
    _by_label(at.text_input, "Model").set_value("gpt-4o")
    _by_label(at.text_input, "Prompt version").set_value("umbrela-v1")
    data = b'{"query_id": "q2", "fragment_id": "f1", "grade": 3, "annotator": "umbrela"}\n'
    at.file_uploader[0].set_value(("umbrela.jsonl", data, "application/x-ndjson")).run()
    at = _by_label(at.button, "Import").click().run()
    assert not at.exception and not at.error
    assert _model_grades(engine, "umbrela") == {("q2", "f1"): 3}
    with engine.connect() as conn:
        assert tuple(
            conn.execute(
                sa.select(User.kind, User.model_name, User.prompt_version).where(User.username == "umbrela")
            ).one()
        ) == ("model", "gpt-4o", "umbrela-v1")
    people = b'{"query_id": "q2", "fragment_id": "f2", "grade": 1, "annotator": "umbrela"}\n'
    _by_label(at.radio, "The file's annotators are").set_value("human").run()
    at.file_uploader[0].set_value(("people.jsonl", people, "application/x-ndjson")).run()
    at = _by_label(at.button, "Import").click().run()
    shown = re.sub(r"\\(.)", r"\1", at.error[0].value.replace(BREAK, ""))
    assert shown.startswith("Nothing imported: people.jsonl:1: annotator 'umbrela' is a model annotator in the store")
    assert _model_grades(engine, "umbrela") == {("q2", "f1"): 3}


def test_app_import_reads_who_judged_from_the_file_unless_told(engine, store_url, judged_project, monkeypatch):
    at = _project_page(engine, store_url, monkeypatch)
    _by_label(at.radio, "What").set_value("judgments").run()
    radio = _by_label(at.radio, "The file's annotators are")
    assert radio.value is None  # the default: as each line's annotator_kind says (a judgments export carries it)
    line = (
        b'{"query_id": "q2", "fragment_id": "f1", "grade": 2, "annotator": "judge-x", '
        b'"annotator_kind": "model", "model": "m-7b"}\n'
    )
    radio.set_value("human").run()  # told "people", a file that says model is refused, nothing written
    at.file_uploader[0].set_value(("export.jsonl", line, "application/x-ndjson")).run()
    at = _by_label(at.button, "Import").click().run()
    assert at.error and "Nothing imported" in at.error[0].value
    assert _model_grades(engine, "judge-x") == {}
    _by_label(at.radio, "The file's annotators are").set_value(None).run()
    at = _by_label(at.button, "Import").click().run()
    assert not at.exception and not at.error
    assert _model_grades(engine, "judge-x") == {("q2", "f1"): 2}
    with engine.connect() as conn:
        assert tuple(conn.execute(sa.select(User.kind, User.model_name).where(User.username == "judge-x")).one()) == (
            "model",
            "m-7b",
        )
