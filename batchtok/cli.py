"""The ``batchtok`` command line."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from . import __version__
from .cli_options import CONTEXT, special_token_options
from .errors import EncodeError, TokenizerFileError
from .utils.program import run_program

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

# The engine is imported by the commands that use it (the runner's commands import it when,
# and only if, a job needs it).
ALL_PIECES = "*"  # explain's merges=ALL_PIECES (the same value as batchtok.explain's)


def _load(path: str) -> Tokenizer:
    from .tokenizer import Tokenizer

    try:
        return Tokenizer.from_file(path)
    except TokenizerFileError as exc:
        raise click.ClickException(f"{path} is refused: {exc}") from exc
    except OSError as exc:
        raise click.ClickException(f"cannot read {path}: {exc.strerror or exc}") from exc


tokenizer_option = click.option(
    "--tokenizer",
    "-t",
    "tokenizer_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Path to a tokenizer.json.",
)


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, prog_name="batchtok")
def main() -> None:
    """Tokenize text exactly as Hugging Face `tokenizers` does, from a tokenizer.json."""


@main.command()
@tokenizer_option
@special_token_options()
@click.argument("texts", nargs=-1)
def encode(tokenizer_path: str, special_tokens: bool, special_text_as_text: bool, texts) -> None:
    """Print the ids of each TEXT (or of each line of stdin) as one JSON array per line.

    \b
    Example:
      batchtok encode -t configs/tokenizers/gpt2/tokenizer.json "Hello world"
      [15496, 995]
    """
    tok = _load(tokenizer_path)
    tok.encode_special_tokens = special_text_as_text
    source = texts if texts else (line.rstrip("\n") for line in sys.stdin)
    out = sys.stdout
    for text in source:
        out.write(json.dumps(tok.encode_ids(text, special_tokens)) + "\n")


@main.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
def inspect(path: str) -> None:
    """Show PATH's component tree and whether batchtok reproduces it exactly.

    Exits with status 1 when the file is refused, naming the JSON path and the reason.
    """
    from .tokenizer import Tokenizer

    try:
        tok = Tokenizer.from_file(path)
    except TokenizerFileError as exc:
        click.echo(f"{path}: refused")
        click.echo(f"  at {exc.path}: {exc.reason}")
        click.echo(f"  value: {exc.value!r}"[:300])
        sys.exit(1)
    click.echo(f"{path}: loads")
    for line in tok.describe().splitlines():
        click.echo("  " + line)


@main.command()
@tokenizer_option
@click.option("--pair", default=None, help="A second sequence, encoded as the pair of TEXT.")
@special_token_options()
@click.option(
    "--merges",
    "merges",
    multiple=True,
    is_flag=False,
    flag_value=ALL_PIECES,
    metavar="[PIECE]",
    help="BPE only: list the merges applied to PIECE (a pre-token as shown, or its text "
    "before the byte-level mapping), in order; without PIECE, to every pre-token. Repeatable. "
    "Put a bare --merges after TEXT, or it takes TEXT as its PIECE.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead.")
@click.option(
    "--color/--no-color",
    default=None,
    help="Force colours on or off (default: on when stdout is a terminal).",
)
@click.argument("text")
def explain(
    tokenizer_path: str,
    pair: str | None,
    special_tokens: bool,
    special_text_as_text: bool,
    merges: tuple[str, ...],
    as_json: bool,
    color: bool | None,
    text: str,
) -> None:
    """Show TEXT's path through the tokenizer, stage by stage, as `tokenizers` takes it.

    The added tokens found (in the raw text, then in the normalized text), each normalizer's
    output, the pre-tokens each pre-tokenizer cuts, the model's tokens and ids, what
    truncation, the post-processor and padding change, and the decoded text. A stage that
    changes nothing says so in one line. The ids shown are checked to be exactly `batchtok
    encode`'s; if the stages ever disagree with them, the command fails (exit 1) and says so.

    \b
    Example:
      batchtok explain -t configs/tokenizers/gpt2/tokenizer.json "Hello world" --merges
    """
    from .explain import ExplainMismatch, MergesRequestError, render
    from .explain import explain as explain_text

    tok = _load(tokenizer_path)
    try:
        doc = explain_text(
            tok,
            text,
            pair,
            add_special_tokens=special_tokens,
            special_text_as_text=special_text_as_text,
            merges=merges,
        )
    except ExplainMismatch as exc:
        raise click.ClickException(f"MISMATCH: {exc}") from exc
    except EncodeError as exc:
        raise click.ClickException(f"cannot encode this text: {exc}") from exc
    except MergesRequestError as exc:
        raise click.BadParameter(str(exc), param_hint="--merges") from exc
    if as_json:
        click.echo(json.dumps({"tokenizer": tokenizer_path, **doc}, ensure_ascii=False))
        return
    for line in render(doc):
        click.echo(line, color=color)


def _register_runner() -> None:
    # The runner's commands live beside the runner; imported here so `batchtok --help` lists
    # them, but the engine never depends on the runner.
    from .runner.cli import audit, check, compare, plan, run, status

    for command in (run, plan, status, audit, check, compare):
        main.add_command(command)


_register_runner()


def program() -> None:
    """The ``batchtok`` program (the installed script, ``python -m batchtok``): :func:`main`,
    ended without freeing the process's objects (see utils/program.py)."""
    run_program(main)


if __name__ == "__main__":
    program()
