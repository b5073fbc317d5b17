import json
from pathlib import Path

from tests.e2e.faults.faults import audit_log


def entry(name: str, at: str) -> str:
    return json.dumps(
        {
            "verb": "update",
            "userAgent": "muster/a",
            "objectRef": {"resource": "leases", "name": name},
            "responseStatus": {"code": 200},
            "requestReceivedTimestamp": at,
        }
    )


def test_the_files_the_api_server_rotated_out_are_read_before_the_current_one(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "audit-2026-12-07T20-44-10.123.log").write_text(
        entry("first", "2026-12-07T20:00:00.000000Z") + "\n"
    )
    (logs / "audit.log").write_text(
        entry("second", "2026-12-07T20:44:11.000000Z") + "\n" + '{"half a line'
    )
    assert [request.name for request in audit_log(tmp_path)] == ["first", "second"]
