"""``python -m batchtok``: the ``batchtok`` command."""

from batchtok.cli import program

if __name__ == "__main__":
    program()
