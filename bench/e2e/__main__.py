"""`python -m bench.e2e`: run the study (bench/e2e/run.py)."""

from bench.e2e.run import main

raise SystemExit(main())
