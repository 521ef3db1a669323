"""batchtok: Hugging Face tokenizer.json files, encoded and decoded exactly, in pure Python."""

from .errors import EncodeError, TokenizerFileError
from .tokenizer import Encoding, Tokenizer

__version__ = "0.1.0"
__all__ = ["Encoding", "EncodeError", "Tokenizer", "TokenizerFileError", "__version__"]
