"""`make test-versions`: Muster's smoke set on every supported Kubernetes version.

For each version of `SUPPORTED_KUBE_VERSIONS` (hack/versions.env), oldest first, or
those `--versions` names: the control plane of that version is built (cached), and the
e2e tests of SMOKE run against a cluster of it, which the e2e conftest starts with the
version in `KUBE_VERSION`, and with Muster as installed (tests/e2e/support/harness.py). Each
version's passed, failed and skipped counts and how long its run took (the cluster's
start included, its build not) replace its row of the table in docs/versions.md,
between the markers; rows of versions not run are kept.

Not part of `make test` (CI runs the default version only); run before each release.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from devtools.builds import HACK, ROOT, supported_versions

PAGE = ROOT / "docs" / "versions.md"
BEGIN = "<!-- begin: make test-versions (hack/versions.py) writes this table -->"
END = "<!-- end: make test-versions -->"
HEADER = (
    "| Kubernetes | passed | failed | skipped | took | run on | not passed |",
    "|---|---|---|---|---|---|---|",
)

# The cluster each version's run starts: the Job field kept where the version has its
# gates (hack/cluster.py falls back to plain where it has not); no Kueue, which no
# smoke test needs.
CLUSTER_FLAGS = "--job-scheduling-field"

E2E = "tests/e2e"
SMOKE = (
    # a gang admitted whole, and kept whole until it fits
    f"{E2E}/test_operator_gang.py::test_four_worker_job_with_four_free_gpus_is_admitted_at_once",
    f"{E2E}/test_operator_gang.py::test_three_free_gpus_hold_the_whole_gang_until_a_node_is_added",
    # a topology gang
    f"{E2E}/test_operator_gang.py::test_zone_topology_keeps_a_gang_in_one_zone_or_waits",
    # a whole-gang preemption
    f"{E2E}/test_operator_disruption.py::"
    "test_a_high_priority_gang_preempts_a_whole_lower_one_which_runs_again_later",
    # refusals rolled back at no cost to the Job
    f"{E2E}/test_operator_job_cost.py::"
    "test_five_rollbacks_in_a_row_cost_a_plain_job_nothing_and_it_then_runs_whole",
    # DRA where resource.k8s.io/v1 is served; refused with the reason where it is not
    f"{E2E}/test_operator_devices.py::test_a_gang_claiming_gpus_lands_whole_where_its_claims_are_allocated",
    f"{E2E}/test_operator_features.py",
    # the native Job field where the API server keeps it (1.37 with its gates, 1.38)
    f"{E2E}/test_operator_native_field.py::"
    "test_a_native_gang_job_is_held_until_it_fits_then_admitted_whole",
    # the webhooks' match conditions: a labelled gang Job costs one webhook call
    f"{E2E}/test_admission.py::"
    "test_a_labelled_gang_job_costs_one_webhook_call_and_its_podgroup_has_its_priority",
    # the pod-rights admission policy
    f"{E2E}/test_operator_rights.py::test_the_operator_may_release_a_pod_but_not_change_it_otherwise",
    f"{E2E}/test_operator_rights.py::test_only_its_own_gate_comes_off",
)


@dataclass(frozen=True)
class Outcome:
    """One version's run of the smoke set."""

    version: str
    passed: int
    failed: int
    skipped: int
    seconds: float
    day: str
    not_passed: tuple[str, ...]  # `name (skipped: why)` or `name (failed)`

    def row(self) -> str:
        notes = "; ".join(self.not_passed) or "none"
        return (
            f"| {self.version} | {self.passed} | {self.failed} | {self.skipped} "
            f"| {self.seconds:.0f} s | {self.day} | {notes} |"
        )


def outcome_of(version: str, report: Path, seconds: float) -> Outcome:
    """The counts of pytest's JUnit report; a run that wrote none failed as a whole."""
    day = datetime.date.today().isoformat()
    if not report.exists():
        return Outcome(version, 0, len(SMOKE), 0, seconds, day, ("the run (no report)",))
    passed = failed = skipped = 0
    not_passed: list[str] = []
    for case in ElementTree.parse(report).iter("testcase"):
        name = case.get("name", "?")
        skip = case.find("skipped")
        if skip is not None:
            skipped += 1
            why = (skip.get("message") or "").removeprefix("Skipped: ")
            not_passed.append(f"{name} (skipped: {why})")
        elif case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            not_passed.append(f"{name} (failed)")
        else:
            passed += 1
    return Outcome(version, passed, failed, skipped, seconds, day, tuple(not_passed))


def run_version(version: str) -> Outcome:
    """Build the version (cached), then run the smoke set on a cluster of it."""
    env = {**os.environ, "KUBE_VERSION": version}
    env.pop("MUSTER_KUBECONFIG", None)  # a cluster of this version, never one handed in
    env["MUSTER_E2E_CLUSTER_DIR"] = str(ROOT / ".cluster-versions")
    env["MUSTER_E2E_CLUSTER_FLAGS"] = CLUSTER_FLAGS
    subprocess.run([str(HACK / "build.sh"), "--without-kueue"], check=True, env=env)
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *SMOKE]
        t0 = time.monotonic()
        subprocess.run([*command, f"--junitxml={report}"], cwd=ROOT, env=env, check=False)
        return outcome_of(version, report, time.monotonic() - t0)


def with_rows(page: str, outcomes: list[Outcome], order: list[str]) -> str:
    """The page with the outcomes' rows in its table (in `order`), other rows kept."""
    begin, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    rows = {
        line.split("|")[1].strip(): line
        for line in page[begin:end].splitlines()
        if re.match(r"\| v\d", line)
    }
    rows |= {outcome.version: outcome.row() for outcome in outcomes}
    ordered = [rows[v] for v in order if v in rows]
    ordered += [row for v, row in rows.items() if v not in order]
    table = "\n".join((*HEADER, *ordered))
    return f"{page[:begin]}\n{table}\n{page[end:]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--versions",
        default=",".join(supported_versions()),
        help="comma-separated versions to run (default: every supported one)",
    )
    versions = parser.parse_args().versions.split(",")
    outcomes = []
    for version in versions:
        outcome = run_version(version)
        outcomes.append(outcome)
        PAGE.write_text(with_rows(PAGE.read_text(), [outcome], supported_versions()))
        print(outcome.row(), flush=True)
    sys.exit(0 if all(outcome.failed == 0 for outcome in outcomes) else 1)


if __name__ == "__main__":
    main()
