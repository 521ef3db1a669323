"""What the run tells: progress and logs (:mod:`.progress`), the counts of encoding
(:mod:`.stats`), token statistics of the outputs (:mod:`.token_stats`) and the run summary."""
