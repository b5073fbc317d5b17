from hack.soak.plan import DURATIONS, FAULT_KINDS, QUIET_SECONDS, WARMUP_SECONDS, schedule


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another() -> None:
    assert schedule(7, 600) == schedule(7, 600)
    assert schedule(7, 600) != schedule(8, 600)


def test_jobs_and_faults_arrive_within_the_run_and_none_in_its_quiet_end() -> None:
    plan = schedule(3, 600)
    end = 600 - QUIET_SECONDS
    assert plan.jobs and all(0 < job.at < end for job in plan.jobs)
    assert plan.faults and all(WARMUP_SECONDS <= f.at < end for f in plan.faults)
    assert [job.at for job in plan.jobs] == sorted(job.at for job in plan.jobs)
    assert len({job.name for job in plan.jobs}) == len(plan.jobs)


def test_ten_minutes_draw_at_least_20_faults_of_at_least_6_kinds() -> None:
    for seed in range(50):
        plan = schedule(seed, 600)
        assert len(plan.faults) >= 20
        assert len({f.kind for f in plan.faults}) >= 6


def test_lasting_faults_last_within_their_bounds_and_the_rest_are_instants() -> None:
    plan = schedule(11, 3600)
    assert {f.kind for f in plan.faults} == set(FAULT_KINDS)
    for fault in plan.faults:
        low, high = DURATIONS.get(fault.kind, (0.0, 0.0))
        assert low <= fault.lasts <= high


def test_some_faults_overlap_the_next() -> None:
    plan = schedule(5, 3600)
    overlapping = [
        a for a, b in zip(plan.faults, plan.faults[1:], strict=False) if b.at < a.at + a.lasts
    ]
    assert overlapping


def test_jobs_mix_sizes_priorities_topology_and_declared_runtimes() -> None:
    jobs = schedule(2, 600).jobs
    assert len({job.workers for job in jobs}) >= 4
    assert {job.priority for job in jobs} == {"soak-low", "soak-high"}
    assert {job.topology for job in jobs} == {True, False}
    assert {job.declared_runtime for job in jobs} == {True, False}
