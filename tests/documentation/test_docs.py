"""The documentation stays true: README.md and docs/*.md.

* Every ```python block runs. A page's blocks run in order, in one namespace, in a scratch
  directory holding copies of ``configs/`` and ``jobs/`` (the bundled tokenizer, samples and
  example jobs), so the examples name those files as a user at the repository root does.
  A block fenced ```python no-run is skipped; there may be at most :data:`MAX_NO_RUN`.
* Shell blocks (```console, ```bash, ```sh) do not run, but every ``batchtok SUBCOMMAND`` in
  them must be a subcommand ``batchtok --help`` lists, and its options must be that
  subcommand's.
* ``docs/job-keys.md`` is what ``python -m tools.gen_job_keys`` writes from the code.
* Relative links resolve, and the README links to every page of docs/.
"""

from __future__ import annotations

import re
import shlex
import shutil
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from batchtok.cli import main as batchtok_main
from tools import gen_job_keys

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
# What a page's examples may name as a user at the repository root does.
BUNDLED = ("configs", "jobs")
SHELL = ("console", "bash", "sh", "shell")
NO_RUN = "no-run"
MAX_NO_RUN = 3
MAX_README_LINES = 250
# Spellings of Python that would silently not run: write ```python.
NOT_PYTHON = ("py", "python3", "pycon", "ipython")
# The README's two commands for a fresh machine; CI calls the second through .ci/run.
SETUP_COMMAND = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e . && "
    ".venv/bin/batchtok run jobs/example.toml"
)
TEST_COMMAND = "bash tests/run_all.sh"

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # the page's line number of the block's first line of code
    lang: str
    flags: tuple[str, ...]
    code: str
    closed: bool

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def fenced_blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        info = opening["info"].split()
        end = i + 1
        while end < len(lines):
            closing = lines[end].strip()
            if closing.startswith(fence) and set(closing) == {fence[0]}:
                break
            end += 1
        body = [line[indent:] if line[:indent].isspace() else line for line in lines[i + 1 : end]]
        lang = info[0].lower() if info else ""
        code = textwrap.dedent("\n".join(body))
        blocks.append(Block(page, i + 2, lang, tuple(info[1:]), code, end < len(lines)))
        i = end + 1
    return blocks


BLOCKS = [block for page in PAGES for block in fenced_blocks(page)]


def runnable(page: Path) -> list[Block]:
    return [b for b in BLOCKS if b.page == page and b.lang == "python" and NO_RUN not in b.flags]


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A working directory holding copies of the bundled files."""
    for name in BUNDLED:
        shutil.copytree(ROOT / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "page",
    [page for page in PAGES if runnable(page)],
    ids=lambda page: str(page.relative_to(ROOT)),
)
def test_python_blocks_run(page, scratch):
    namespace: dict = {"__name__": f"doc:{page.name}"}
    for block in runnable(page):
        # padded so that a traceback names the page's own line numbers
        code = compile("\n" * (block.line - 1) + block.code, str(block.page), "exec")
        try:
            exec(code, namespace)
        except Exception as exc:
            raise AssertionError(f"the example at {block.where} fails: {exc!r}") from exc


def test_no_run_blocks_are_few():
    skipped = [b.where for b in BLOCKS if b.lang == "python" and NO_RUN in b.flags]
    assert len(skipped) <= MAX_NO_RUN, f"more than {MAX_NO_RUN} python no-run blocks: {skipped}"


def test_blocks_are_well_formed():
    assert [b.where for b in BLOCKS if not b.closed] == [], "a code fence is never closed"
    misspelt = [b.where for b in BLOCKS if b.lang in NOT_PYTHON]
    assert misspelt == [], "write ```python, or the block does not run"
    flags = {flag for b in BLOCKS if b.lang == "python" for flag in b.flags}
    assert flags <= {NO_RUN}, f"unknown flags on python blocks: {sorted(flags - {NO_RUN})}"


def test_toml_blocks_are_true():
    """Every ```toml block is TOML; one that shows a job of jobs/ shows its keys as they are."""
    jobs = {}
    for path in sorted((ROOT / "jobs").glob("*.toml")):
        with open(path, "rb") as f:
            job = tomllib.load(f)
        jobs[job.get("name")] = (path, job)
    shown = 0
    for block in BLOCKS:
        if block.lang != "toml":
            continue
        try:
            data = tomllib.loads(block.code)
        except tomllib.TOMLDecodeError as exc:
            raise AssertionError(f"{block.where} is not TOML: {exc}") from exc
        if data.get("name") in jobs:
            path, job = jobs[data["name"]]
            assert data == job, f"{block.where} differs from {path.relative_to(ROOT)}"
            shown += 1
    assert shown, "no page shows a job of jobs/"


# -- shell blocks -------------------------------------------------------------------------------


def subcommands() -> set[str]:
    """The commands ``batchtok --help`` lists."""
    result = CliRunner().invoke(batchtok_main, ["--help"])
    assert result.exit_code == 0, result.output
    listed = result.output.partition("\nCommands:\n")[2]
    names = {line.split()[0] for line in listed.splitlines() if line.startswith("  ")}
    assert names, f"no commands found in batchtok --help:\n{result.output}"
    return names


def options_of(command: click.Command) -> set[str]:
    names = {"-h", "--help"}
    for param in command.params:
        if isinstance(param, click.Option):
            names.update(param.opts, param.secondary_opts)
    return names


def command_lines(block: Block) -> list[str]:
    """The commands a shell block runs: a console block's ``$ `` lines, every other line of a
    script (continuation lines joined)."""
    text = block.code.replace("\\\n", " ")
    if block.lang == "console":
        return [line[2:] for line in text.splitlines() if line.startswith("$ ")]
    return [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


def batchtok_calls(line: str) -> list[list[str]]:
    """Each ``batchtok ...`` call on a command line, as its words after ``batchtok``."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = list(lexer)
    calls = []
    for i, word in enumerate(words):
        program = word.rsplit("/", 1)[-1] == "batchtok"
        as_module = word == "batchtok" and i >= 1 and words[i - 1] == "-m"
        if program or as_module:
            rest = []
            for arg in words[i + 1 :]:
                if arg and set(arg) <= set("();<>|&"):
                    break
                rest.append(arg)
            calls.append(rest)
    return calls


def test_shell_blocks_name_real_commands():
    known = subcommands()
    assert known == set(batchtok_main.commands)
    problems = []
    seen = 0
    for block in BLOCKS:
        if block.lang not in SHELL:
            continue
        for line in command_lines(block):
            for call in batchtok_calls(line):
                seen += 1
                if not call or call[0].startswith("-"):
                    continue  # batchtok --help, --version
                name = call[0]
                if name not in known:
                    problems.append(f"{block.where}: `batchtok {name}` is not a command")
                    continue
                allowed = options_of(batchtok_main.commands[name])
                for arg in call[1:]:
                    option = arg.partition("=")[0]
                    if option.startswith("-") and option != "-" and option not in allowed:
                        problems.append(f"{block.where}: `batchtok {name}` has no {option}")
    assert problems == []
    assert seen, "no batchtok command found in any shell block"


# -- generated pages, links, the README's commitments ------------------------------------------


def test_job_keys_page_is_current(capsys):
    assert gen_job_keys.main(["--check"]) == 0, capsys.readouterr().err


def test_links_resolve():
    broken = []
    for page in PAGES:
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL, or an anchor on the same page
            path = (page.parent / target.partition("#")[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_readme_links_every_page():
    text = README.read_text(encoding="utf-8")
    docs_readme = (DOCS / "README.md").read_text(encoding="utf-8")
    pages = sorted(p.name for p in DOCS.glob("*.md") if p.name != "README.md")
    assert [p for p in pages if f"](docs/{p}" not in text] == []
    assert [p for p in pages if f"]({p})" not in docs_readme] == []
    assert "](docs/README.md)" in text


def test_readme_keeps_its_first_commands():
    first = fenced_blocks(README)[0]
    lines = first.code.splitlines()
    assert SETUP_COMMAND in lines and TEST_COMMAND in lines
    assert f"exec {TEST_COMMAND}" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, "move details to docs/; the README is the user guide"
