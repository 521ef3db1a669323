"""``batchtok audit``'s two modes as click parses them: ``JOB_FILE``, or ``-t TOKENIZER.json
FILE...``. The usage shows both, and arguments or options of the other mode are a usage error
(exit 2) raised while parsing, before any file is read."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from batchtok.cli import main
from tests.support.runner import GPT2


def audit(*args: str):
    return CliRunner().invoke(main, ["audit", *args], prog_name="batchtok")


def test_the_usage_names_both_modes():
    result = audit("--help")
    assert result.exit_code == 0
    assert "Usage: batchtok audit [OPTIONS] JOB_FILE" in result.output
    assert "or: batchtok audit -t TOKENIZER.json [OPTIONS] FILE..." in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give one job file"),
        (("a.toml", "b.toml"), "give one job file"),
        (("missing.toml", "--column", "body"), "are for -t"),
        (("missing.toml", "--no-special-tokens"), "are for -t"),
        (("missing.toml", "--special-text-as-text"), "are for -t"),
        (("-t", str(GPT2)), "give the text files"),
        (("-t", str(GPT2), "texts.txt", "--workers", "2"), "need a job"),
        (("-t", str(GPT2), "texts.txt", "--set", "run.workers=2"), "need a job"),
    ],
)
def test_arguments_of_the_other_mode_are_a_usage_error(args, message):
    result = audit(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Usage: batchtok audit [OPTIONS] JOB_FILE" in result.output
