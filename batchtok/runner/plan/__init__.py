"""What the run will do: shards and their cache keys (:mod:`.keys`), which of them earlier
runs finished (:mod:`.states`), the plan report (:mod:`.prepare`) and the tasks sent to workers
(:mod:`.tasks`)."""
