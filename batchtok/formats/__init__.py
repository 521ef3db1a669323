"""Trainer formats: Megatron-LM's indexed dataset (:mod:`.megatron`), datatrove's tokenized
files (:mod:`.datatrove`), MosaicML streaming's MDS (:mod:`.mds`), and packing into
fixed-length rows (:mod:`.packing`).

Each format has a streaming writer (documents one at a time; memory: 4 bytes a document),
a validating reader, and a ``merge`` joining one input file's per-shard outputs in order.
Files are written under a temporary name and published atomically in an order that keeps
every visible file set whole; each set carries a provenance sidecar (:mod:`.files`).
Nothing here depends on the runner.
"""
