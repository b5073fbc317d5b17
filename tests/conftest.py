"""Settings shared by every test.

Property tests explore new random examples on every developer run, where finding a
counterexample is the point; CI (`MUSTER_HYPOTHESIS_PROFILE=ci`, set by `.ci/run`)
replays a fixed, derandomized set so that a landing is judged on the same examples
every time.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", deadline=None)
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("MUSTER_HYPOTHESIS_PROFILE", "dev"))
