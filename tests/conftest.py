"""Settings shared by every test.

Property tests explore new random examples on every developer run, where finding a
counterexample is the point; CI (`MUSTER_HYPOTHESIS_PROFILE=ci`, set by `.ci/run`)
replays a fixed, derandomized set so that a landing is judged on the same examples
every time. Under CI a skipped test fails the run (`tests.ci_skips`).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

pytest_plugins = ["tests.ci_skips"]

settings.register_profile("dev", deadline=None)
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("MUSTER_HYPOTHESIS_PROFILE", "dev"))
