"""`python -m bench.informer`: run the study (bench/informer/run.py)."""

from bench.informer.run import main

main()
