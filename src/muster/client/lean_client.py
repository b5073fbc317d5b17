"""kubernetes-asyncio without its 800-odd generated classes, until something asks for one.

Importing `kubernetes_asyncio` imports every API and model class it has: some 60 MiB
of class objects, a fifth of the operator's memory at 5,000 nodes, for an operator
that reads and writes plain JSON on its session (raw responses) and asks the
library only for its configuration, its config loaders and its exceptions. kopf
imports two model classes from it (`V1ObjectMeta`, `V1OwnerReference`) to recognise
them.

`install()` registers `kubernetes_asyncio.client` and its `models` and `api` packages
as modules whose `__init__` has not run, then imports the library itself. A name read
from a deferred package is imported from the module that defines it (the generator
names each module after its class), and a name found nowhere else runs the package's
own `__init__` in place, so whatever a caller reads is there as before. It must run
before anything imports the library: `muster.operator`'s package does it first thing.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from types import ModuleType

PACKAGE = "kubernetes_asyncio"
DEFERRED = (f"{PACKAGE}.client", f"{PACKAGE}.client.models", f"{PACKAGE}.client.api")
# Names the client package defines outside its models and APIs, by their module.
_CLIENT_NAMES = {
    "ApiClient": "api_client",
    "Configuration": "configuration",
    **dict.fromkeys(
        (
            "OpenApiException",
            "ApiTypeError",
            "ApiValueError",
            "ApiKeyError",
            "ApiAttributeError",
            "ApiException",
        ),
        "exceptions",
    ),
}
_WORD = re.compile(r"(?<!^)(?=[A-Z])")


def install() -> None:
    """Import the library with its client packages deferred (a no-op once it is
    imported)."""
    if PACKAGE in sys.modules:
        return
    top = _unrun(PACKAGE)
    sys.modules[PACKAGE] = top
    try:
        for name in DEFERRED:
            parent, _, child = name.rpartition(".")
            module = _unrun(name)
            module.__dict__["__getattr__"] = _resolver(module)
            sys.modules[name] = module
            setattr(sys.modules[parent], child, module)
        _run(top)  # binds `client` to the deferred package, imports the rest
    except BaseException:
        for name in (PACKAGE, *DEFERRED):
            sys.modules.pop(name, None)
        raise


def _unrun(name: str) -> ModuleType:
    """The module, its `__init__` not run yet."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name}")
    return importlib.util.module_from_spec(spec)


def _run(module: ModuleType) -> None:
    """Run the module's own code in it."""
    assert module.__spec__ is not None and module.__spec__.loader is not None
    module.__spec__.loader.exec_module(module)


def _resolver(package: ModuleType) -> object:
    """The package's `__getattr__`: a submodule, a class from its module, or the
    package loaded whole."""
    loaded = False

    def resolve(name: str) -> object:
        nonlocal loaded
        if loaded:
            raise AttributeError(name)
        for module in _candidates(package.__name__, name):
            if importlib.util.find_spec(module) is not None:
                found = importlib.import_module(module)
                if module.endswith(f".{name}"):
                    return found
                if hasattr(found, name):
                    return getattr(found, name)
        loaded = True
        _run(package)
        return getattr(package, name)

    return resolve


def _candidates(package: str, name: str) -> list[str]:
    """Where `name` may be defined: a submodule of that name, or a class's module."""
    snake = _WORD.sub("_", name).lower()
    candidates = [f"{package}.{name}"]
    if package == f"{PACKAGE}.client":
        if name in _CLIENT_NAMES:
            return [f"{package}.{_CLIENT_NAMES[name]}"]
        kind = "api" if name.endswith("Api") else "models"
        candidates.append(f"{package}.{kind}.{snake}")
    elif package.endswith((".models", ".api")):
        candidates.append(f"{package}.{snake}")
    return candidates
