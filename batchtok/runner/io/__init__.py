"""Where bytes live: :data:`.stores.STORES`, local files and S3 (:mod:`.s3`), by URI scheme;
inputs read through ``pyarrow.fs`` (:mod:`.arrow_fs`); the run's lock; how file names are shown."""
