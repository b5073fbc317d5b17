"""`python -m bench.memory`: run the study (bench/memory/run.py)."""

from bench.memory.run import main

main()
