"""`python -m bench.engine`: run the study (bench/engine/run.py)."""

from bench.engine.run import main

raise SystemExit(main())
