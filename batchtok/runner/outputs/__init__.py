"""What the run writes: Parquet outputs written atomically (:mod:`.parquet`) and which files at
output paths a run may replace (:mod:`.ownership`)."""
