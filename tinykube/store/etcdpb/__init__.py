"""etcd's protobuf messages: the generated modules that come with `aetcd` (`kv_pb2`, `rpc_pb2`, `auth_pb2`),
loaded as this package's own modules.

Imported as `aetcd.rpc.*` they would first run `aetcd/__init__.py` and `aetcd/rpc/__init__.py`, which import
aetcd's client and with it grpcio: ~8 MB of an idle apiserver for a library it never calls (the gRPC client is
`tinykube.store.grpc`). The generated modules import only protobuf and each other (relatively), so this package's
search path is aetcd's `rpc` directory and nothing of aetcd's own code runs.
"""

from __future__ import annotations

import importlib.util
import os

_aetcd = importlib.util.find_spec("aetcd")  # finds a top-level package without importing it
if _aetcd is None or not _aetcd.submodule_search_locations:
    raise ImportError("etcd's protobuf messages come with the `aetcd` package: pip install aetcd")
__path__ = [os.path.join(_aetcd.submodule_search_locations[0], "rpc")]
