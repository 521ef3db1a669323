"""Where bytes live: local files and object storage (inputs read through ``pyarrow.fs``,
outputs and state written atomically), the run's lock, and how file names are shown."""
