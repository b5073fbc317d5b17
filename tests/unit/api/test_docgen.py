"""The generated API reference: fresh in docs/, deterministic, complete."""

from __future__ import annotations

from pathlib import Path

from muster.api.crdgen import custom_resource_definitions
from muster.api.docgen import FieldRow, field_rows, main, render

PAGE = Path(__file__).parents[3] / "docs" / "api-reference.md"


def rows_of(kind: str) -> dict[str, FieldRow]:
    crd = next(c for c in custom_resource_definitions() if c["spec"]["names"]["kind"] == kind)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return {row.path: row for row in field_rows(schema)}


def test_api_reference_is_up_to_date() -> None:
    assert PAGE.read_text() == render(), "docs/api-reference.md is stale: run `make docs`"


def test_generation_is_deterministic() -> None:
    assert render() == render()


def test_main_writes_the_page(tmp_path: Path) -> None:
    target = tmp_path / "api-reference.md"
    assert main([str(target)]) == 0
    assert target.read_text() == render()


def test_main_wants_exactly_one_file() -> None:
    assert main([]) == 2


def test_every_field_of_the_schema_has_a_described_row() -> None:
    rows = rows_of("PodGroup")
    assert "spec.schedulingPolicy.gang.minCount" in rows
    assert "spec.schedulingConstraints.topology[].key" in rows
    assert "status.conditions[].reason" in rows
    for path, row in rows.items():
        if path.startswith("spec.") or path.startswith("status."):
            assert row.description, path


def test_types_required_and_rules() -> None:
    rows = rows_of("PodGroup")
    assert rows["spec.schedulingPolicy.gang.minCount"].type == "integer, required"
    assert rows["status.plan"].type == "map[string]string"
    assert rows["status.minCount"].type == "integer or string"
    assert rows["spec.schedulingPolicy.basic"].type == "object (empty: `{}`)"
    assert rows["spec.schedulingConstraints.topology"].type == "[]object"
    assert (
        "Checked: gang.minCount must be at least 1."
        in rows["spec.schedulingPolicy.gang"].description
    )
    assert "`PreemptLowerPriority`, `Never`" in rows["spec.preemptionPolicy"].description
    templates = rows_of("Workload")["spec.podGroupTemplates"]
    assert "1 to 8 items." in templates.description


def test_both_kinds_and_their_columns_are_on_the_page() -> None:
    page = render()
    assert "## PodGroup" in page
    assert "## Workload" in page
    assert "| Status | The reason of the PodGroupScheduled condition. |" in page
    assert "| Topology (with `-o wide`) |" in page
