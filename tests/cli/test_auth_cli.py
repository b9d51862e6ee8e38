"""`qrelkit user …`: add, list, deactivate (ends every session), activate, set-password (stdin), set-role;
refusals exit 2 with one line (SQLite and PostgreSQL)."""

from __future__ import annotations

import io
import json

import pytest

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.accounts.sessions import create_session, resolve
from db.accounts.users import authenticate, create_user, get_user


@pytest.fixture
def cli(store_url, capsys, monkeypatch):
    """Run `qrelkit ARGS` against the test store with `stdin` text; returns (exit code, stdout JSON or None,
    stderr)."""

    def run(*args: str, stdin: str = ""):
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = main([*args, "--db", store_url, "--format", "json"])
        out, err = capsys.readouterr()
        return code, (json.loads(out) if out.strip() else None), err

    return run


def test_add_and_list_with_the_password_from_stdin(cli, engine):
    code, out, _ = cli("user", "add", "ana", "--role", "annotator", "--password-stdin", stdin="ana-password\n")
    assert code == 0 and (out["username"], out["role"], out["active"], out["can_login"]) == (
        "ana",
        "annotator",
        True,
        True,
    )
    assert cli("user", "add", "imported", "--role", "annotator", "--no-password")[1]["can_login"] is False
    assert authenticate(engine, "ana", "ana-password") is not None
    code, out, _ = cli("user", "list")
    assert code == 0 and [(u["username"], u["can_login"]) for u in out] == [("ana", True), ("imported", False)]
    assert [u["username"] for u in cli("user", "list", "--role", "lead")[1]] == []


@pytest.mark.parametrize(
    "password, problem",
    [("short77", "at least 8 characters"), ("         ", "only whitespace"), ("", "empty password")],
)
def test_a_weak_password_is_refused_in_one_line_and_nothing_is_written(cli, engine, password, problem):
    code, out, err = cli("user", "add", "ana", "--role", "annotator", "--password-stdin", stdin=password + "\n")
    assert (code, out) == (2, None)
    assert err.startswith("qrelkit: error: ") and problem in err and err.count("\n") == 1
    assert cli("user", "list")[1] == []


def test_deactivate_ends_every_session_at_once_and_activate_lets_the_user_log_in_again(cli, engine):
    lea = create_user(engine, "lea", "lead", "lead-password", actor=OPERATOR)
    tabs = [create_session(engine, lea.id) for _ in range(2)]
    code, out, _ = cli("user", "deactivate", "lea")
    assert code == 0 and (out["active"], out["can_login"]) == (False, False)
    assert [resolve(engine, t.token) for t in tabs] == [None, None]
    assert authenticate(engine, "lea", "lead-password") is None
    code, out, _ = cli("user", "activate", "lea")
    assert code == 0 and out["can_login"] is True
    assert authenticate(engine, "lea", "lead-password") is not None
    assert [resolve(engine, t.token) for t in tabs] == [None, None]  # ended sessions stay ended


def test_set_password_reads_stdin_and_applies_the_policy(cli, engine):
    create_user(engine, "ana", "annotator", actor=OPERATOR)
    assert cli("user", "set-password", "ana", "--password-stdin", stdin="a new passphrase\n")[0] == 0
    assert authenticate(engine, "ana", "a new passphrase") is not None
    code, _, err = cli("user", "set-password", "ana", "--password-stdin", stdin="tiny\n")
    assert code == 2 and "at least 8 characters" in err
    assert authenticate(engine, "ana", "a new passphrase") is not None


def test_set_password_prompts_twice_without_stdin(cli, engine, monkeypatch):
    create_user(engine, "ana", "annotator", actor=OPERATOR)
    answers = iter(["first-password", "second-password"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    code, _, err = cli("user", "set-password", "ana")
    assert code == 2 and "passwords do not match" in err and not get_user(engine, "ana").can_login


def test_set_role_ends_the_open_sessions_of_that_account(cli, engine):
    ana = create_user(engine, "ana", "annotator", "ana-password", actor=OPERATOR)
    tab = create_session(engine, ana.id)
    code, out, _ = cli("user", "set-role", "ana", "lead")
    assert code == 0 and out["role"] == "lead" and resolve(engine, tab.token) is None
    assert resolve(engine, create_session(engine, ana.id).token).role == "lead"


def test_user_unlock_lifts_the_back_off_and_user_delete_says_why_it_refuses(cli, engine):
    from db.accounts.logins import login

    create_user(engine, "ana", "annotator", "ana-password", actor=OPERATOR)
    for i in range(5):
        login(engine, "ana", "wrong-password", client=f"10.4.0.{i}")
    assert login(engine, "ana", "ana-password", client="10.0.0.1").user is None
    code, out, _ = cli("user", "unlock", "ana")
    assert code == 0 and out == {"username": "ana", "unlocked": True}
    assert login(engine, "ana", "ana-password", client="10.0.0.1").user is not None
    create_user(engine, "gpt-judge", "annotator", actor=OPERATOR)
    assert cli("user", "delete", "gpt-judge")[0] == 0
    code, _, err = cli("user", "delete", "gpt-judge")
    assert code == 2 and "no user named 'gpt-judge'" in err


def test_unknown_users_and_roles_are_refused(cli, capsys):
    for action in (("deactivate", "zed"), ("activate", "zed"), ("set-role", "zed", "lead")):
        code, _, err = cli("user", *action)
        assert (code, err) == (2, "qrelkit: error: no user named 'zed'\n")
    with pytest.raises(SystemExit):
        main(["user", "set-role", "zed", "admin"])
    assert "invalid choice: 'admin'" in capsys.readouterr().err


def test_a_password_piped_without_password_stdin_says_which_option_reads_it(cli, engine, monkeypatch):
    """`echo pw | qrelkit user add ana` (no terminal): getpass reads the piped line as the first prompt and hits the
    end of input at "again:"; the refusal names --password-stdin instead of an unexplained EOFError."""

    def no_terminal(prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr("getpass.getpass", no_terminal)
    code, out, err = cli("user", "add", "ana", "--role", "annotator", stdin="ana-password\n")
    assert (code, out) == (2, None)
    assert "--password-stdin" in err and "EOFError" not in err and err.count("\n") == 1
    assert cli("user", "list")[1] == []


def test_adding_an_account_an_import_made_says_to_set_its_password(cli, engine):
    """A judgments import makes accounts without passwords; `user add` on such a name says how to let the person
    log in instead of a bare "already exists"."""
    assert cli("user", "add", "ana", "--role", "annotator", "--no-password")[0] == 0
    code, out, err = cli("user", "add", "ana", "--role", "annotator", "--password-stdin", stdin="ana-password\n")
    assert (code, out) == (2, None)
    assert "already exists, without a password" in err and "qrelkit user set-password ana" in err
    assert err.count("\n") == 1
