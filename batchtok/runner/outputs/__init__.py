"""What the run writes: every output format once (:data:`.formats.FORMATS`), Parquet written
atomically (:mod:`.parquet`), and which files at output paths a run may replace
(:mod:`.ownership`)."""
