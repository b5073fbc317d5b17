"""`python -m bench.eta`: run the study (bench/eta/run.py)."""

from bench.eta.run import main

raise SystemExit(main())
