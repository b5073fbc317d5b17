"""`python -m bench.dashboard`: run the study (bench/dashboard/run.py)."""

from bench.dashboard.run import main

raise SystemExit(main())
