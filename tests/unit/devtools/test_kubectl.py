"""Undoing a fault keeps trying until the API server takes it."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from devtools import kubectl as kubectl_module
from devtools.kubectl import Kubectl


@dataclass(frozen=True)
class Restarting(Kubectl):
    """Refuses its first `refusals` calls, as an API server that is restarting."""

    refusals: int = 2
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def __call__(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        self.calls.append(args)
        code = 1 if len(self.calls) <= self.refusals else 0
        return subprocess.CompletedProcess(args, code, "", "")


def test_a_command_is_run_again_until_it_lands() -> None:
    kubectl = Restarting(Path("kubeconfig"))
    kubectl.persist("delete", "flowschema", "x")
    assert kubectl.calls == [("delete", "flowschema", "x")] * 3


def test_it_gives_up_after_its_patience(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubectl_module, "PERSIST_SECONDS", 0.5)
    with pytest.raises(AssertionError, match="kubectl delete flowschema x"):
        Restarting(Path("kubeconfig"), refusals=100).persist("delete", "flowschema", "x")
