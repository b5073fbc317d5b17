"""What the API server answered when a planned pod could not be released: an observation.

A release is one patch per pod (remove the gang gate, pin the planned node). The API
server may refuse it: a ValidatingAdmissionPolicy or an admission webhook that says
no (403 Forbidden, or 422 Invalid, a policy's default), or validation of the patch
itself (422). Such a refusal is an answer, not a hiccup: the same patch would be
refused again, so a gang with a refused member cannot complete as planned and is
rolled back at once, quoting the API's text. Any other failure (no answer, a timeout,
the server's own trouble) may pass: the pod is released again, no sooner than
`RETRY_SECONDS` after the failure, until the gang's release deadline. A conflict
(409: the pod had changed since the version the release was conditional on) is
`stale`: the operator forgets it as soon as it sees a newer version of the pod, and
the pod is released again from that version at once.

The operator reports each release's outcome (`ClusterState.observe_release`); the
state forgets it when the pod changes or goes, and the engine reads only those made
since the gang's release clock last started, so a failure of an earlier admission
never decides about a later one. Like every observation the operator makes, it is
not written anywhere: a restarted operator releases the pod again and observes anew.
"""

from __future__ import annotations

from dataclasses import dataclass

REFUSED_STATUSES = frozenset({403, 422})
CONFLICT = 409
RETRY_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class ReleaseFailure:
    """The API server did not release a pod: its status (0: no answer) and its words."""

    status: int
    message: str
    at: float  # when the operator observed it (seconds since the epoch)

    @property
    def refused(self) -> bool:
        """An admission policy, webhook or validation said no: retrying cannot help."""
        return self.status in REFUSED_STATUSES

    @property
    def stale(self) -> bool:
        """The release was conditional on a version of the pod that is no longer its
        latest: due again from the newer version, once that is seen."""
        return self.status == CONFLICT
