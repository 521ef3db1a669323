"""What the run reads: which files a job names (:mod:`.discovery`), their footers and columns
(:mod:`.files`), JSON Lines blocks and rows (:mod:`.jsonl`), Arrow IPC record batches and
``datasets`` directories (:mod:`.arrow_ipc`), and text columns as arrays."""
