"""`qrelkit user add | list | deactivate | activate | set-password | set-role | unlock | delete`: accounts.

The CLI acts as OPERATOR (whoever holds the database URL). Passwords never appear on the command line: they
are prompted for twice, or read from one line of stdin.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from annotator.cli.common import db_option, emit, report_option, store_engine
from eval_core.vocab import ROLES as ROLE_CHOICES  # standard library only: `--help` loads no store


def _read_password(args: argparse.Namespace, name: str) -> str | None:
    """One line of stdin with --password-stdin, none with --no-password, else an interactive prompt (twice)."""
    if getattr(args, "no_password", False):
        return None
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        try:
            password = getpass.getpass(f"password for {name}: ")
            again = getpass.getpass("again: ")
        except EOFError:
            raise ValueError(
                "no password was typed twice at the prompt: for one line of stdin, pass "
                "--password-stdin (or --no-password for an account that cannot log in)"
            ) from None
        if again != password:
            raise ValueError("passwords do not match")
    if not password:
        raise ValueError("empty password (use --no-password for an account that cannot log in)")
    return password


def _report(info) -> dict:
    """What the commands print about one account (never its password hash)."""
    return {
        "id": info.id,
        "username": info.username,
        "role": info.role,
        "active": info.active,
        "can_login": info.can_login,
        "kind": info.kind,
    }


def cmd_user_add(args: argparse.Namespace) -> int:
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user

    engine = store_engine(args)
    emit(args, _report(create_user(engine, args.name, args.role, _read_password(args, args.name), actor=OPERATOR)))
    return 0


def cmd_user_list(args: argparse.Namespace) -> int:
    from db.accounts.users import list_users

    emit(args, [_report(u) for u in list_users(store_engine(args), role=args.role)])
    return 0


def cmd_user_deactivate(args: argparse.Namespace) -> int:
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import deactivate

    emit(args, _report(deactivate(store_engine(args), args.name, actor=OPERATOR)))
    return 0


def cmd_user_activate(args: argparse.Namespace) -> int:
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import activate

    emit(args, _report(activate(store_engine(args), args.name, actor=OPERATOR)))
    return 0


def cmd_user_set_password(args: argparse.Namespace) -> int:
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import set_password

    password = _read_password(args, args.name)
    if password is None:  # set-password has no --no-password: _read_password always returns one
        raise ValueError("set-password needs a password")
    engine = store_engine(args)
    emit(args, _report(set_password(engine, args.name, password, actor=OPERATOR)))
    return 0


def cmd_user_set_role(args: argparse.Namespace) -> int:
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import set_role

    emit(args, _report(set_role(store_engine(args), args.name, args.role, actor=OPERATOR)))
    return 0


def cmd_user_unlock(args: argparse.Namespace) -> int:
    from db.accounts.logins import unlock
    from db.accounts.permissions import OPERATOR

    unlock(store_engine(args), args.name, actor=OPERATOR)
    emit(args, {"username": args.name, "unlocked": True})
    return 0


def cmd_user_delete(args: argparse.Namespace) -> int:
    from db.accounts.permissions import OPERATOR
    from db.accounts.users import delete_user

    emit(args, {"username": args.name, "deleted": True, **delete_user(store_engine(args), args.name, actor=OPERATOR)})
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `user` and its actions to the `qrelkit` parser."""
    user = subparsers.add_parser("user", help="accounts: add, list, (de)activate, passwords, roles").add_subparsers(
        dest="user_command", metavar="ACTION", required=True
    )
    p = user.add_parser("add", help="add an annotator or lead (password prompted twice, or one line of stdin)")
    p.add_argument("name")
    p.add_argument("--role", choices=ROLE_CHOICES, required=True)
    how = p.add_mutually_exclusive_group()
    how.add_argument("--password-stdin", action="store_true", help="read the password from one line of stdin")
    how.add_argument("--no-password", action="store_true", help="an account that cannot log in")
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_user_add)

    p = user.add_parser("list", help="list accounts")
    p.add_argument("--role", choices=ROLE_CHOICES)
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_user_list)

    p = user.add_parser("deactivate", help="stop an account: no login, no new assignments, every session ends now")
    p.add_argument("name")
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_user_deactivate)

    p = user.add_parser("activate", help="let a deactivated account log in again")
    p.add_argument("name")
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_user_activate)

    p = user.add_parser(
        "set-password",
        help="set an account's password (prompted twice, or one line of stdin; "
        "at least 8 characters, not only whitespace)",
    )
    p.add_argument("name")
    p.add_argument("--password-stdin", action="store_true", help="read the password from one line of stdin")
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_user_set_password)

    p = user.add_parser("set-role", help="make an account a lead or an annotator (open sessions see it at once)")
    p.add_argument("name")
    p.add_argument("role", choices=ROLE_CHOICES)
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_user_set_role)

    p = user.add_parser("unlock", help="lift an account's login back-off (after someone else's wrong guesses)")
    p.add_argument("name")
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_user_unlock)

    p = user.add_parser(
        "delete",
        help="remove an account that holds no grades (e.g. a model judge whose run "
        "graded nothing); refused, with the reason, otherwise",
    )
    p.add_argument("name")
    db_option(p)
    report_option(p)
    p.set_defaults(func=cmd_user_delete)
