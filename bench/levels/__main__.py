"""`python -m bench.levels`: run the study (bench/levels/run.py)."""

from bench.levels.run import main

raise SystemExit(main())
