"""Which Host headers `muster dashboard` answers: its own address, no other name (pure).

`muster dashboard` reads the cluster with the user's own credentials and asks no
token of the browser: whatever can reach its port sees what the user may see. A web
page of another site cannot read it directly (the browser's same-origin policy),
unless that site's name is made to resolve to the user's machine after the page
loaded (DNS rebinding): the browser then sends the page's requests to the dashboard
with the other site's name as their Host. So the dashboard answers only requests
addressed to it by an address that no one else's DNS can hand out: the address it
binds, `localhost` when that address is a loopback one, any IP address when it binds
every address (an IP address is not a name anyone can rebind), and the names the
user adds (`--allowed-host`). The port is not compared: a forwarded port (`ssh -L`,
`kubectl port-forward`) changes it, and a rebinding attack needs a name, not a port.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from muster.client.connection import is_loopback_host

WILDCARDS = frozenset({"", "0.0.0.0", "::"})
LOCALHOST = "localhost"


def host_name(header: str) -> str:
    """The name or address of a Host header, without its port, brackets or final dot,
    in lower case."""
    host = header.strip().lower()
    if host.startswith("["):  # [IPv6]:port
        host = host[1 : host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def allowed_host(header: str | None, address: str, extra: Iterable[str] = ()) -> bool:
    """Whether a request with this Host header is addressed to a dashboard bound to
    `address` (the `--address` flag), or to a name in `extra`."""
    if not header:
        return False
    name = host_name(header)
    if name in {host_name(other) for other in extra}:
        return True
    if address.strip() in WILDCARDS:
        return name == LOCALHOST or _ip(name) is not None
    bound = host_name(address)
    if is_loopback_host(bound) and is_loopback_host(name):
        return True
    ip = _ip(name)
    return name == bound or (ip is not None and ip == _ip(bound))


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None
