"""`python -m bench.devices`: run the study (bench/devices/run.py)."""

from bench.devices.run import main

main()
