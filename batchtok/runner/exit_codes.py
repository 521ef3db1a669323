"""Exit codes of ``batchtok run`` (and ``plan``), for cron and scripts.

==  ==========================================================================================
0   success: every shard is complete (written now or found complete in the output)
1   failure: at least one shard failed (worker error or crash, disk full, a bad row under
    ``bad_rows = "fail"``); completed shards are kept and a re-run resumes
2   usage or validation error: nothing was run (the message names the job key)
3   success with bad rows: every shard is complete, and some rows had a null text (or
    could not be encoded) and were handled by the ``bad_rows`` policy
4   another run holds the job's lock (its output directory); nothing was run
130 interrupted (Ctrl-C or SIGTERM); completed shards are kept and a re-run resumes
==  ==========================================================================================
"""

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_OK_WITH_BAD_ROWS = 3
EXIT_LOCKED = 4
EXIT_INTERRUPTED = 130
