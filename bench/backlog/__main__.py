"""`python -m bench.backlog`: run the study (bench/backlog/run.py)."""

from bench.backlog.run import main

raise SystemExit(main())
