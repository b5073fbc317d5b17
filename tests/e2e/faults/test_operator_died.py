"""An operator that dies during a fault test fails that test, and the next test gets a
new one.

The fault suite's operator runs for the whole package; a test that leaves it dead
(not stopped or killed on purpose) must not pass, and must not take the next test
down with it.
"""

from __future__ import annotations

import signal

from devtools.operator import OperatorProcess

from tests.e2e.faults.faults import death_of


def test_an_operator_that_died_is_reported_with_its_last_words(operator: OperatorProcess) -> None:
    assert death_of(operator) is None
    process = operator.process
    assert process is not None
    process.send_signal(signal.SIGKILL)  # not `kill()`: as if it had crashed
    process.wait(timeout=10)
    died = death_of(operator)
    assert died is not None
    assert died.startswith(f"the operator died during this test (exit status {-signal.SIGKILL})")
    assert operator.log_tail() in died
    operator.process = None  # reported: this test passes, and the next one starts it again


def test_the_next_test_gets_a_running_operator(operator: OperatorProcess) -> None:
    assert operator.process is not None and operator.process.poll() is None
    assert operator.ready()
