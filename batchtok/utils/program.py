"""How the ``batchtok`` program ends: without freeing the objects of the process.

Python's own exit frees every object before the process ends: with a large tokenizer loaded
(llama3: 128k vocab strings, their dicts, the merges) that takes ~0.1 s, a fifth of a small
run. :func:`run_program` does what that exit does that anyone can observe (waits for the
threads that are not daemons, runs the ``atexit`` handlers: logging's flush, Ray's shutdown,
temporary directories' finalizers; flushes the standard streams) and then ends the process.
Every file a command writes is closed (and the outputs fsynced) before it returns. Only the
program does this: a command called in-process (click's test runner, a library) returns.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable

#: Whether this process is the batchtok program (set by :func:`run_program`), not a longer-lived
#: process calling batchtok (a run's start-up then counts from the call, not the process)
PROGRAM = False


def run_program(main: Callable[[], object]) -> None:
    """Run ``main`` (a click command in its standalone mode, which ends with SystemExit) and
    end the process with its exit status. An exception other than SystemExit (a
    KeyboardInterrupt, a bug) is left to Python's exit, which reports it."""
    global PROGRAM
    PROGRAM = True
    # numpy's OpenBLAS starts a thread per core when imported, which spin while the program
    # starts (~50 ms of CPU beside a run's imports and load); batchtok never multiplies matrices
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    status = _status(code)
    main_thread = threading.main_thread()
    for thread in threading.enumerate():
        if thread is not main_thread and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: Python's exit reports status 120
            status = status or 120
    os._exit(status)


def _status(code: object) -> int:
    """The exit status ``sys.exit(code)`` gives: 0 for None, the int, else 1 after printing
    the object to stderr."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1
