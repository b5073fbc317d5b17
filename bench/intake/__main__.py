"""`python -m bench.intake`: run the study (bench/intake/run.py)."""

from bench.intake.run import main

raise SystemExit(main())
