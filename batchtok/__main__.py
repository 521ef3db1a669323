"""``python -m batchtok``: the ``batchtok`` command."""

from batchtok.cli import main

if __name__ == "__main__":
    main()
