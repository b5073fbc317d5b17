"""`python -m bench.admission`: run the study (bench/admission/run.py)."""

from bench.admission.run import main

raise SystemExit(main())
