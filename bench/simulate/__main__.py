"""`python -m bench.simulate`: run the study (bench/simulate/run.py)."""

from bench.simulate.run import main

main()
