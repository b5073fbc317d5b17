from hack.soak.excuses import Excused, Span
from hack.soak.judge import Violation
from hack.soak.report import FaultRecord, build, recovery, section


def fault(kind: str, at: float, hit: bool = True) -> FaultRecord:
    return FaultRecord(kind, at, 0.0, hit, "evidence")


def test_recovery_is_the_time_to_the_first_gang_released_after_the_fault() -> None:
    releases = [5.0, 12.5, 30.0]
    assert recovery(fault("etcd-restart", 10.0), releases) == 2.5
    assert recovery(fault("etcd-restart", 12.5), releases) == 0.0
    assert recovery(fault("etcd-restart", 31.0), releases) is None


def report() -> dict[str, object]:
    return build(
        seed=42,
        kinds=("etcd-restart", "proxy-cut"),
        fault_every=20,
        duration=600,
        started="2026-12-07T13:00:00+00:00",
        faults=[
            fault("etcd-restart", 10),
            fault("etcd-restart", 20),
            fault("proxy-cut", 25, hit=False),
        ],
        releases=[11.0, 24.0],
        submitted=70,
        completed=60,
        violations=[Violation("lost", 600, "soak-0001", "submitted at +3s")],
        excused=[
            Excused(
                Span("soak-0002", 30.0, 52.0, "partial"), 4.0, ("proxy-cut (+31.0s to +49.0s)",)
            )
        ],
        restarts={"b": [2], "a": [-9, 0]},
    )


def test_the_report_counts_faults_by_kind_jobs_violations_and_restarts() -> None:
    made = report()
    faults = made["faults"]
    assert isinstance(faults, dict)
    assert (faults["injected"], faults["hit"], faults["kinds"]) == (3, 2, 1)
    assert faults["by_kind"]["etcd-restart"] == {
        "injected": 2,
        "hit": 2,
        "recovery_p50": 2.5,
        "recovery_p99": 3.97,
    }
    assert faults["by_kind"]["proxy-cut"]["recovery_p50"] is None
    assert made["jobs"] == {"submitted": 70, "completed": 60}
    assert made["violations"] == [
        {
            "seed": 42,
            "invariant": "lost",
            "at": 600,
            "subject": "soak-0001",
            "detail": "submitted at +3s",
        }
    ]
    assert made["restarts"] == {"a": [-9, 0], "b": [2]}
    assert made["excused_partials"] == [
        {
            "gang": "soak-0002",
            "start": 30.0,
            "end": 52.0,
            "detail": "partial",
            "counted": 4.0,
            "excused_by": ["proxy-cut (+31.0s to +49.0s)"],
        }
    ]


def test_the_docs_section_names_the_figures_and_every_violation() -> None:
    text = section(report(), "soak.json")
    assert "3 faults injected, 2 hit, of 1 kinds" in text
    assert "| etcd-restart | 2 | 2 | 2.5 s | 4.0 s |" in text
    assert "| proxy-cut | 1 | 0 | - | - |" in text
    assert "- lost at +600.0s, soak-0001: submitted at +3s" in text
    assert "operator restarts: a: 2, b: 1" in text
    assert (
        "- soak-0002 at +30.0s, partial 22.0s, 4.0s counted; excused: proxy-cut (+31.0s to +49.0s)"
        in text
    )
