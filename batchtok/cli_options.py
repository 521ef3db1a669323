"""Options more than one ``batchtok`` command takes, defined once: the engine's commands
(:mod:`batchtok.cli`) and the runner's (:mod:`batchtok.runner.cli`) both read them."""

from __future__ import annotations

from collections.abc import Callable

import click

CONTEXT = {"help_option_names": ["-h", "--help"]}


def special_token_options(when: str = "") -> Callable[[Callable], Callable]:
    """The options deciding special tokens (``when``: what they apply to, opening their help,
    for a command where they apply to one mode only)."""

    def add(command: Callable) -> Callable:
        command = click.option(
            "--special-text-as-text",
            is_flag=True,
            help=f"{when}Encode special-token strings found inside the text (e.g. "
            "'<|endoftext|>') as ordinary text instead of as the special token.",
        )(command)
        return click.option(
            "--special-tokens/--no-special-tokens",
            default=True,
            show_default=True,
            help=f"{when}Add the post-processor's special tokens (BOS/EOS...) around each text.",
        )(command)

    return add
