"""What the run reads: which files a job names (:mod:`.discovery`), their footers and columns
(:mod:`.files`), JSON Lines blocks and rows (:mod:`.jsonl`), and text columns as arrays."""
