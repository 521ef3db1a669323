"""Job files: includes, defaults, overrides, and validation errors that name their key."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from batchtok.runner.errors import JobError
from batchtok.runner.job import SETTINGS, load_job, parse_override
from tests.support.runner import (
    EXAMPLE_JOB,
    GPT2,
    REPO,
    SAMPLE,
    basic_job,
    invoke,
    template_tokenizer,
    texts,
    write_parquet,
)


def test_example_job_loads_with_included_defaults() -> None:
    job = load_job(EXAMPLE_JOB)
    assert job.name == "example"
    assert job.inputs == (str(SAMPLE),)
    assert job.tokenizer_path == GPT2
    assert job.output_dir == REPO / "out" / "example"
    assert (job.dtype, job.compression, job.bad_rows) == ("int32", "zstd", "null_ids")
    assert job.sources["run.bad_rows"].endswith("configs/defaults.toml")
    assert job.sources["input.paths"].endswith("jobs/example.toml")


def test_paths_resolve_against_the_file_that_sets_them(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "tok.toml").write_text('[tokenizer]\npath = "tok.json"\n')
    (tmp_path / "jobs").mkdir()
    job_file = tmp_path / "jobs" / "j.toml"
    job_file.write_text(
        'include = ["../shared/tok.toml"]\n[input]\npaths = ["data/*.parquet"]\n'
        '[output]\ndir = "../out"\n'
    )
    job = load_job(job_file, cwd="/")
    assert job.tokenizer_path == tmp_path / "shared" / "tok.json"
    assert job.inputs == (str(tmp_path / "jobs" / "data" / "*.parquet"),)
    assert job.output_dir == tmp_path / "out"


def test_job_keys_win_over_includes_and_command_line_wins_over_both(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text('[output]\ndtype = "uint32"\ncompression = "gzip"\n')
    job_file = tmp_path / "j.toml"
    job_file.write_text(
        'include = ["base.toml"]\n[input]\npaths = ["x"]\n[tokenizer]\npath = "t.json"\n'
        '[output]\ndir = "o"\ndtype = "uint16"\n'
    )
    job = load_job(job_file)
    assert (job.dtype, job.compression) == ("uint16", "gzip")
    job = load_job(job_file, {"output.dtype": "int32", "output.dir": "rel"}, cwd=tmp_path / "c")
    assert job.dtype == "int32"
    assert job.output_dir == tmp_path / "c" / "rel"


def test_parse_override_reads_toml_values_else_strings() -> None:
    assert parse_override("encode.max_length=512") == ("encode.max_length", 512)
    assert parse_override("encode.add_special_tokens=false") == ("encode.add_special_tokens", False)
    assert parse_override('output.keep_columns=["a", "b"]') == ("output.keep_columns", ["a", "b"])
    assert parse_override("output.dir=/tmp/x y") == ("output.dir", "/tmp/x y")
    with pytest.raises(JobError, match="KEY=VALUE"):
        parse_override("output.dir")


BASE = '[input]\npaths = ["x.parquet"]\n[tokenizer]\npath = "t.json"\n[output]\ndir = "o"\n'


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ('[tokenizer]\npath = "t.json"\n[output]\ndir = "o"\n', "input.paths", "required"),
        (BASE.replace('["x.parquet"]', '"x.parquet"'), "input.paths", "list of strings"),
        (BASE.replace('["x.parquet"]', "[]"), "input.paths", "non-empty list"),
        (BASE + "[input]\n", "", "not valid TOML"),  # a table defined twice
        (BASE.replace('"t.json"', "3"), "tokenizer.path", "non-empty string"),
        (BASE + 'dtype = "int64"\n', "output.dtype", '"int32", "uint16", "uint32"'),
        (BASE + 'compression = "zip"\n', "output.compression", "expected one of"),
        (BASE + 'keep_columns = "some"\n', "output.keep_columns", '"all" or a list'),
        (BASE + 'keep_columns = ["a", "a"]\n', "output.keep_columns", "unique"),
        (BASE + 'ids_column = ""\n', "output.ids_column", "non-empty string"),
        (BASE + 'count_column = "input_ids"\n', "output.count_column", "must differ"),
        (BASE + "row_group_mb = 0\n", "output.row_group_mb", "number > 0"),
        (BASE + 'dtpye = "uint16"\n', "output.dtpye", "did you mean output.dtype"),
        (BASE + "[encode]\nmax_length = -1\n", "encode.max_length", '"none" or an integer'),
        (BASE + "[encode]\nmax_length = 0\n", "encode.max_length", '"none" turns truncation'),
        (BASE + '[encode]\nmax_length = "all"\n', "encode.max_length", '"tokenizer", "none"'),
        (
            BASE + '[encode]\ntruncation_strategy = "only_first"\n',
            "encode.truncation_strategy",
            "only with a numeric encode.max_length",
        ),
        (
            BASE + '[encode]\nmax_length = "none"\ntruncation_direction = "left"\n',
            "encode.truncation_direction",
            "only with a numeric encode.max_length",
        ),
        (
            BASE + '[encode]\nmax_length = 8\ntruncation_strategy = "only_second"\n',
            "encode.truncation_strategy",
            "input.pair_column is not set",
        ),
        (BASE + '[encode]\nmax_length = 8\ntruncation_direction = "up"\n', "encode.trunc", "one"),
        (BASE.replace("[tokenizer]", "pair_column = 3\n[tokenizer]"), "input.pair_column", "name"),
        (
            BASE.replace("[tokenizer]", 'pair_column = "text"\n[tokenizer]'),
            "input.pair_column",
            "must differ from input.text_column",
        ),
        (BASE + '[encode]\nadd_special_tokens = "yes"\n', "encode.add_special_tokens", "true or"),
        (BASE + '[encode]\nspecial_tokens_in_text = "x"\n', "encode.special_tokens_in_text", "one"),
        (BASE + "[run]\nworkers = 0\n", "run.workers", '"auto" or an integer >= 1'),
        (BASE + 'workers = "many"\n', "output.workers", "unknown key"),
        (BASE + '[run]\nbad_rows = "drop"\n', "run.bad_rows", '"null_ids", "empty_ids"'),
        (BASE + "[run]\nshard_mb = -5\n", "run.shard_mb", "number > 0"),
        (BASE + "[run]\nbatch_mb = true\n", "run.batch_mb", "number > 0"),
        (BASE + '[run]\nexecutor = "spark"\n', "run.executor", '"local", "ray"'),
        (BASE + '[run]\nray_address = "auto"\n', "run.ray_address", 'run.executor = "ray"'),
        (BASE + "[run]\nray_address = 1\n", "run.ray_address", "expected a string"),
        (BASE + "[outptu]\ndir = 1\n", "outptu", "did you mean output"),
        ("run = 3\n" + BASE, "run", "expected a table [run]"),
        ('include = ["nope.toml"]\n' + BASE, "include", "file not found"),
        ("include = 3\n" + BASE, "include", "list of file paths"),
        ("name = 3\n" + BASE, "name", "expected a string"),
    ],
)
def test_each_validation_error_names_its_key(
    tmp_path: Path, text: str, key: str, expected: str
) -> None:
    job_file = tmp_path / "job.toml"
    job_file.write_text(text, encoding="utf-8")
    with pytest.raises(JobError) as err:
        load_job(job_file)
    message = str(err.value)
    assert f"{key}" in message and expected in message, message
    assert "job.toml" in message


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    job_file = tmp_path / "job.toml"
    job_file.write_text(BASE + 'dtype = "x"\n[run]\nworkers = -1\nbad_rows = 1\n')
    with pytest.raises(JobError) as err:
        load_job(job_file)
    keys = {p.key for p in err.value.problems}
    assert keys == {"output.dtype", "run.workers", "run.bad_rows"}


def test_a_problem_in_an_included_file_names_that_file(tmp_path: Path) -> None:
    (tmp_path / "shared.toml").write_text('[run]\nbad_rows = "later"\n')
    job_file = tmp_path / "job.toml"
    job_file.write_text('include = ["shared.toml"]\n' + BASE)
    with pytest.raises(JobError) as err:
        load_job(job_file)
    (problem,) = err.value.problems
    assert problem.key == "run.bad_rows" and problem.source.endswith("shared.toml")


def test_include_cycle_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('include = ["b.toml"]\n')
    (tmp_path / "b.toml").write_text('include = ["a.toml"]\n')
    job_file = tmp_path / "job.toml"
    job_file.write_text('include = ["a.toml"]\n' + BASE)
    with pytest.raises(JobError, match="includes itself"):
        load_job(job_file)


def test_every_setting_has_help_and_a_valid_default() -> None:
    for setting in SETTINGS:
        assert setting.help
        if setting.shown_default != "required":
            setting.check(setting.default)


# -- checks that need the inputs or the tokenizer: still before any work, exit code 2 --------


def _run_expect_usage_error(job: Path, *args: str) -> str:
    code, output = invoke("run", job, *args)
    assert code == 2, output
    out = job.parent / "out"
    assert not out.exists() or not any(p.suffix == ".parquet" for p in out.rglob("*"))
    return output


def test_missing_text_column(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5), text_column="body")
    output = _run_expect_usage_error(basic_job(tmp_path))
    assert "input.text_column" in output and 'column "text" is missing' in output
    assert "a.parquet" in output and "body" in output


def test_text_column_that_is_not_text(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5), extra={"n": list(range(5))})
    output = _run_expect_usage_error(basic_job(tmp_path, input__text_column="n"))
    assert "input.text_column" in output and "int64" in output and "expected strings" in output


def test_kept_column_missing(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    output = _run_expect_usage_error(basic_job(tmp_path, output__keep_columns=["id", "url"]))
    assert "output.keep_columns" in output and "url missing" in output


def test_output_column_clashing_with_a_kept_column(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5), extra={"input_ids": list(range(5))})
    output = _run_expect_usage_error(basic_job(tmp_path))
    assert "output.ids_column" in output and "input_ids" in output


def test_unreadable_input_file(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "bad.parquet").write_bytes(b"this is not parquet" * 10)
    output = _run_expect_usage_error(basic_job(tmp_path))
    assert "input.paths" in output and "cannot read" in output and "bad.parquet" in output


def test_input_path_that_does_not_exist(tmp_path: Path) -> None:
    output = _run_expect_usage_error(basic_job(tmp_path, input__paths=[str(tmp_path / "nope")]))
    assert "input.paths" in output and "no such file or directory" in output


def test_refused_tokenizer(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    bad = json.loads(GPT2.read_text())
    bad["pre_tokenizer"]["type"] = "NoSuchPreTokenizer"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    output = _run_expect_usage_error(
        basic_job(tmp_path, tokenizer__path=str(tmp_path / "bad.json"))
    )
    assert "tokenizer.path" in output and "refused" in output and "pre_tokenizer" in output


def test_missing_tokenizer(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    output = _run_expect_usage_error(basic_job(tmp_path, tokenizer__path=str(tmp_path / "no.json")))
    assert "tokenizer.path" in output and "cannot read" in output


def test_dtype_too_narrow_for_the_vocabulary(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", ["ab"])
    data = json.loads(GPT2.read_text())
    data["model"]["vocab"]["zz-wide"] = 70_000  # an id above 65535
    (tmp_path / "wide.json").write_text(json.dumps(data))
    job = basic_job(tmp_path, tokenizer__path=str(tmp_path / "wide.json"), output__dtype="uint16")
    output = _run_expect_usage_error(job)
    assert "output.dtype" in output and "70000" in output and "use uint32" in output


def test_max_length_below_the_templates_special_tokens(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    job = basic_job(
        tmp_path, tokenizer__path=str(template_tokenizer(tmp_path)), encode__max_length=1
    )
    output = _run_expect_usage_error(job)
    assert "encode.max_length" in output and "2 special tokens" in output


def test_output_that_would_overwrite_an_input(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    output = _run_expect_usage_error(basic_job(tmp_path, output__dir=str(tmp_path / "in")))
    assert "output.dir" in output and "holds the input directory" in output


def test_output_inside_an_input_tree_is_fine_and_never_read_as_input(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    job = basic_job(tmp_path, output__dir=str(tmp_path / "in" / "tokenized"))
    assert invoke("run", job)[0] == 0
    code, output = invoke("plan", job)
    assert code == 0 and "1 files, 1 shards: 1 cached" in output


def test_two_inputs_with_the_same_output_name(tmp_path: Path) -> None:
    a = write_parquet(tmp_path / "x" / "a.parquet", texts(5))
    b = write_parquet(tmp_path / "y" / "a.parquet", texts(5))
    output = _run_expect_usage_error(basic_job(tmp_path, input__paths=[str(a), str(b)]))
    assert "input.paths" in output and "both be written to a.parquet" in output


def test_the_executor_is_chosen_by_its_key_or_the_executor_option(tmp_path: Path) -> None:
    job_file = tmp_path / "job.toml"
    job_file.write_text(BASE, encoding="utf-8")
    assert load_job(job_file).executor == "local"
    job = load_job(job_file, {"run.executor": "ray", "run.ray_address": "10.0.0.1:6379"})
    assert (job.executor, job.ray_address) == ("ray", "10.0.0.1:6379")
    assert job.describe()["run"]["executor"] == "ray"
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    output = _run_expect_usage_error(basic_job(tmp_path), "--executor", "spark")
    assert "'spark' is not one of 'local', 'ray'" in output


def test_the_ray_executor_without_ray_installed_names_the_extra(
    tmp_path: Path, monkeypatch
) -> None:
    job_file = tmp_path / "job.toml"
    job_file.write_text(BASE + '[run]\nexecutor = "ray"\n', encoding="utf-8")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(JobError) as err:
        load_job(job_file)
    assert "run.executor" in str(err.value) and "batchtok[ray]" in str(err.value)


def test_unknown_override_key_on_the_command_line(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    output = _run_expect_usage_error(basic_job(tmp_path), "--set", "output.dtpe=uint16")
    assert "output.dtpe" in output and "did you mean output.dtype" in output
    assert "command line" in output


def test_a_job_found_invalid_after_a_good_run_says_so_in_status(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    job = basic_job(tmp_path)
    assert invoke("run", job)[0] == 0
    assert invoke("status", job)[0] == 0
    code, output = invoke("run", job, "--set", "input.text_column=body")
    assert code == 2 and "input.text_column" in output
    code, output = invoke("status", job)
    assert code == 1 and "last run: invalid (exit 2)" in output and "input.text_column" in output


def test_every_key_is_declared_once_and_reaches_the_job_by_its_attribute():
    """A key is one Setting: its value fills the Job attribute it names (storage.* the job's
    StorageOptions), and every attribute of the Job but the file, the sources and the
    storage options comes from exactly one key."""
    import dataclasses

    from batchtok.runner.io.arrow_fs import StorageOptions
    from batchtok.runner.job import Job

    storage = {s.attribute for s in SETTINGS if s.key.startswith("storage.")}
    others = [s.attribute for s in SETTINGS if not s.key.startswith("storage.")]
    assert storage == {f.name for f in dataclasses.fields(StorageOptions)}
    assert sorted(others) == sorted(
        f.name for f in dataclasses.fields(Job) if f.name not in ("file", "sources", "storage")
    )


def test_the_output_options_are_the_settings_declared_output(tmp_path):
    job_file = tmp_path / "job.toml"
    job_file.write_text(
        '[input]\npaths = ["in"]\n[tokenizer]\npath = "t.json"\n[output]\ndir = "out"\n'
        "pack_length = 8\npack_keep_last = false\n"
    )
    job = load_job(job_file)
    declared = {s.attribute for s in SETTINGS if s.output}
    # packed Parquet's extra columns decide its bytes too (keyed since seq_lens was added)
    assert set(job.output_format()) == declared | {"packed_columns"}
    assert job.output_format()["packed_columns"] == ["seq_lens"]
    assert job.output_format()["pack_keep_last"] is False and job.pack_keep_last is False
    assert job.output_format()["pack_length"] == 8
    # a key added after outputs were cached is keyed only when set, so other jobs keep theirs
    assert "position_ids" not in job.output_format()
    assert load_job(job_file, {"output.position_ids": True}).output_format()["position_ids"]
