"""The ``batchtok`` command line."""

from __future__ import annotations

import json
import sys

import click

from . import __version__
from .errors import TokenizerFileError
from .tokenizer import Tokenizer


def _load(path: str) -> Tokenizer:
    try:
        return Tokenizer.from_file(path)
    except TokenizerFileError as exc:
        raise click.ClickException(f"{path} is refused: {exc}") from exc
    except OSError as exc:
        raise click.ClickException(f"cannot read {path}: {exc.strerror or exc}") from exc


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="batchtok")
def main() -> None:
    """Tokenize text exactly as Hugging Face `tokenizers` does, from a tokenizer.json."""


@main.command()
@click.option(
    "--tokenizer",
    "-t",
    "tokenizer_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Path to a tokenizer.json.",
)
@click.option(
    "--special-tokens/--no-special-tokens",
    default=True,
    show_default=True,
    help="Add the post-processor's special tokens (BOS/EOS...) around each text.",
)
@click.option(
    "--special-text-as-text",
    is_flag=True,
    help="Encode special-token strings found inside the text (e.g. '<|endoftext|>') as "
    "ordinary text instead of as the special token.",
)
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


def _register_runner() -> None:
    # The runner's commands live beside the runner; imported here so `batchtok --help` lists
    # them, but the engine never depends on the runner.
    from .runner.cli import audit, plan, run, status

    for command in (run, plan, status, audit):
        main.add_command(command)


_register_runner()


if __name__ == "__main__":
    main()
