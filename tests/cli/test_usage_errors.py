"""An argument a command does not take is refused by that command: its own usage line and `qrelkit CMD: error:`,
not the top parser's `usage: qrelkit [-h] COMMAND ...`, with the options a mistyped one may have meant."""

from __future__ import annotations

import pytest

from annotator.cli import main


def refusal(argv: list[str], capsys) -> list[str]:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err.strip().splitlines()


def test_trec_evals_m_given_to_eval_names_the_options_it_may_mean(capsys) -> None:
    err = refusal(["eval", "qrels.txt", "run.txt", "-m", "map"], capsys)
    assert err[0].startswith("usage: qrelkit eval ")
    assert err[-1] == (
        "qrelkit eval: error: unrecognized arguments: -m map (did you mean --metrics or --missing or --max-grade?)"
    )


def test_a_misspelt_long_option_names_the_nearest(capsys) -> None:
    err = refusal(["eval", "qrels.txt", "run.txt", "--kay", "10"], capsys)
    assert err[-1] == "qrelkit eval: error: unrecognized arguments: --kay 10 (did you mean --k?)"


def test_an_extra_word_nothing_resembles_is_named_alone(capsys) -> None:
    err = refusal(["agreement", "judgments.jsonl", "--zzz"], capsys)
    assert err[0].startswith("usage: qrelkit agreement ")
    assert err[-1] == "qrelkit agreement: error: unrecognized arguments: --zzz"


def test_a_nested_command_refuses_with_its_own_usage(capsys) -> None:
    err = refusal(["user", "add", "cat", "--role", "annotator", "--pasword-stdin"], capsys)
    assert err[0].startswith("usage: qrelkit user add ")
    assert err[-1].startswith(
        "qrelkit user add: error: unrecognized arguments: --pasword-stdin (did you mean --password-stdin"
    )  # difflib's nearest first; one letter away
