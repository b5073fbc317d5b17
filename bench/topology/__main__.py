"""`python -m bench.topology`: run the study (bench/topology/run.py)."""

from bench.topology.run import main

raise SystemExit(main())
