"""`python -m hack.soak --duration=SECONDS --seed=N` (what `make soak` runs)."""

import sys

from hack.soak.run import main

sys.exit(main())
