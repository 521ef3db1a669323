"""batchtok: Hugging Face tokenizer.json files, encoded and decoded exactly, in pure Python.

``Tokenizer`` and ``Encoding`` are imported on first use, so that tools which only need the
version or the error types (the job runner's no-op re-run) do not pay for loading the engine.
"""

from typing import TYPE_CHECKING

from .errors import DecodeError, EncodeError, TokenizerFileError

__version__ = "0.1.0"
__all__ = [
    "AddedToken",
    "DecodeError",
    "VerificationError",
    "verify",
    "Encoding",
    "EncodeError",
    "Tokenizer",
    "TokenizerFileError",
    "__version__",
]

if TYPE_CHECKING:
    from .added_vocabulary import AddedToken
    from .encoding import Encoding
    from .runner.verify import VerificationError, verify
    from .tokenizer import Tokenizer


def __getattr__(name: str):
    if name in ("Tokenizer", "Encoding"):
        from . import tokenizer

        return getattr(tokenizer, name)
    if name == "AddedToken":
        from . import added_vocabulary

        return added_vocabulary.AddedToken
    if name in ("verify", "VerificationError"):  # (the runner's: it reads outputs)
        from .runner import verify

        return getattr(verify, name)
    raise AttributeError(f"module 'batchtok' has no attribute {name!r}")
