"""`python -m bench.growth`: run the study (bench/growth/run.py)."""

from bench.growth.run import main

raise SystemExit(main())
