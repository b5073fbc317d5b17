"""Placing a gang's pods onto the nodes a request allows: the one choice of how.

Slice by slice when the gang has slices (`slices`), pod by pod when inter-pod rules
or device claims tie its pods together (`interplay`, retried other ways when it falls
short: `retries`), else best fit by shape (`fit.place_gang`). Admission, preemption,
growth and the topology steps all place through here.
"""

from __future__ import annotations

from muster.scheduler.placement.fit import place_gang
from muster.scheduler.placement.request import FitRequest
from muster.scheduler.placement.retries import pod_by_pod
from muster.scheduler.placement.slices import place_slices


def place(request: FitRequest) -> dict[str, int]:
    """Pod name -> node slot for as many members as fit (up to the request's limit);
    the result may hold fewer than `needed`: the caller decides what that means."""
    if request.slicing is not None:
        return place_slices(request)
    if request.interplay is not None:
        return pod_by_pod(request.interplay, request)
    return place_gang(
        request.free,
        request.shapes,
        within=request.within,
        order=request.order,
        largest=request.largest,
        needed=request.needed,
        limit=request.cap,
    )
