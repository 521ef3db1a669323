"""Who does the work: a worker's tasks (:mod:`.worker`, encoding through :mod:`.encode`), run
by forked processes (:mod:`.local`) or by actors of a Ray cluster (:mod:`.ray_cluster`)."""
