"""Job-file fuzzing: every key with a value of every wrong type gives one outcome, an invalid
job (exit code 2) naming the key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from batchtok.runner.errors import InvalidValue, JobError
from batchtok.runner.job import SETTINGS, load_job
from tests.support.runner import GPT2, invoke

# TOML literals of every type TOML has, and edge values of the right types.
VALUES = (
    "true",
    "0",
    "-1",
    "1",
    "18446744073709551616",
    "1.5",
    "nan",
    "inf",
    '""',
    '"x"',
    "[]",
    "[1]",
    '["a", 2]',
    "{ a = 1 }",
    "1979-05-27T07:32:00Z",
    "07:32:00",
)
BASE = {
    "input.paths": '["in"]',
    "tokenizer.path": f'"{GPT2}"',
    "output.dir": '"out"',
}


def _job_text(key: str, literal: str) -> str:
    values = {**BASE, key: literal}
    sections: dict[str, list[str]] = {}
    top = []
    for dotted, value in values.items():
        if "." in dotted:
            section, name = dotted.split(".", 1)
            sections.setdefault(section, []).append(f"{name} = {value}")
        else:
            top.append(f"{dotted} = {value}")
    return "\n".join(top + [f"[{s}]\n" + "\n".join(lines) for s, lines in sections.items()])


def _refused(setting, literal: str) -> bool:
    value = tomllib.loads(f"v = {literal}")["v"]
    try:
        setting.check(value)
    except InvalidValue:
        return True
    return False


CASES = [(s.key, literal) for s in SETTINGS for literal in VALUES if _refused(s, literal)]


@pytest.mark.parametrize(("key", "literal"), CASES)
def test_a_wrong_value_is_an_invalid_job_naming_its_key(tmp_path: Path, key, literal) -> None:
    job = tmp_path / "job.toml"
    job.write_text(_job_text(key, literal), encoding="utf-8")
    with pytest.raises(JobError) as info:
        load_job(job)
    assert info.value.exit_code == 2
    assert [p.key for p in info.value.problems] == [key]


def test_the_command_line_says_the_same(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(_job_text("run.workers", "1.5"), encoding="utf-8")
    code, output = invoke("run", job)
    assert code == 2 and "run.workers" in output


def test_every_key_has_wrong_values_tried() -> None:
    assert {key for key, _ in CASES} == {s.key for s in SETTINGS}
