"""What a cycle decides, as frozen values: the plan the operator carries out and the
results it reports.

One of the engine's two faces (beside `muster.scheduler` itself): code outside the
engine imports these values from here, never from the modules that define them.
"""

from muster.scheduler.decisions.plan import (
    Action,
    EventTarget,
    Evict,
    Notice,
    Plan,
    RecordEvent,
    Release,
    Step,
    StepKind,
    Ungate,
    WriteStatus,
)
from muster.scheduler.decisions.results import (
    NOTHING_CARRIED,
    Carried,
    CycleResult,
    Explanation,
    Verdict,
)

__all__ = [
    "NOTHING_CARRIED",
    "Action",
    "Carried",
    "CycleResult",
    "EventTarget",
    "Evict",
    "Explanation",
    "Notice",
    "Plan",
    "RecordEvent",
    "Release",
    "Step",
    "StepKind",
    "Ungate",
    "Verdict",
    "WriteStatus",
]
