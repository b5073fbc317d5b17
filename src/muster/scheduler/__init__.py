"""The decision engine: which gangs run now, where their pods go, who is preempted.

Pure and deterministic: no I/O, no asyncio, no clock (``now`` is an argument). The same
state and configuration always give the same result.
"""
