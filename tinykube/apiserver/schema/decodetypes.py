"""A body's fields of the wrong JSON type, refused as upstream's decoder refuses them, for every served kind.

kube-apiserver decodes a request body into the kind's Go struct before anything else looks at it, so a field of the
wrong JSON type never reaches defaulting or validation: Go's `encoding/json` (sigs.k8s.io/json's case-sensitive
fork) refuses it, and the create or update answers 400

    Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number into Go struct field
    Container.spec.containers.image of type string

The OpenAPI definitions (`definitions`) know every field's type, so one walk over them decides it for every kind; each
kind's definition is compiled once, on first use, into a small tree of typed nodes shared between kinds (a
`Container` node serves Pods, Deployments, Jobs ...), so the cost of a check grows with the object, not with the
number of kinds. A well-typed object (nearly every one) is checked by a fast pass that only answers yes or no; the
slow pass, which keeps the error context and the decoder's rules, runs only when the fast one says no.

What Go's decoder does, and so what this does:

* A JSON value of another type than the field's is an `UnmarshalTypeError`: `json: cannot unmarshal <number|string
  |bool|array|object> into Go struct field <Struct>.<path> of type <Go type>`, where <Struct> is the Go struct that
  holds the innermost field and <path> the JSON names from the top, without list indices or map keys (a map value
  or a list element is reported at its map's or list's field). An integer field given a fraction or a number out of
  range says `number 1.5`. Decoding goes on after such an error and the *first* one is reported.
* `null` is always accepted: it leaves the field at its zero value. A struct field given null is dropped here, as
  Go would not write it back (`replicas: null` defaults like an absent `replicas`); times and raw objects keep it
  (Go writes a zero time as null), and a null list element or map value is left to validation.
* A field whose Go type decodes itself (`json.Unmarshaler`) fails at once, and that error wins even over an earlier
  type error: a quantity that does not parse (`quantities must match the regular expression ...`), an int-or-string
  that is neither (`... of type int32`), a `Time`/`MicroTime` that is not a string (`... of type string`) or not
  RFC 3339 (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"`).
* A `[]byte` field is base64 text (`illegal base64 data at input byte 4`) or an array of bytes.
* Unknown fields are skipped (`fieldvalidation` reports them); `RawExtension`, `FieldsV1` and schemaless objects
  take anything.

The body's form decides the rest (`Source`): a YAML body is converted to JSON first, so its keys are walked in
sorted order and a whole float (`replicas: 3.0`) is an integer; a JSON patch or merge patch result is decoded like a
body but answered 422 (`patch: Invalid value: "<the patched object>": json: ...`); a strategic merge patch result is
converted from a map by `runtime.DefaultUnstructuredConverter` instead, whose words differ (`unrecognized type:
int32`, `cannot convert int64 to string`, `cannot restore struct from: string`) and which accepts whole floats (and
wraps integers that overflow), answered 422 with the patch as Go's `%+v` prints it. Protobuf bodies are typed by
their encoding and not walked.

Simplifications (documented, not hidden): Go type names come from the OpenAPI definitions, so a field of a named
string or map type is `string`/`map[string]string` except for the common ones listed in `_NAMED`; a number's literal
is Python's rendering of the parsed value (`1e3` is reported as `1000.0`); the strategic-merge converter's first
error is taken in the object's key order, not Go's struct field order; server-side apply (structured-merge-diff
upstream) is answered with the create's decode error.
"""

from __future__ import annotations

import base64
import enum
import re
from datetime import date
from typing import Any, NoReturn

import orjson

from tinykube.api import errors, golang
from tinykube.api.quantity import QuantityError, parse_quantity
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.schema import definitions


class Source(enum.Enum):
    """Where the object being checked came from, which decides the decoder's rules and the answer."""

    JSON = "json"  # a JSON create or update body
    YAML = "yaml"  # a YAML body, converted to JSON before decoding
    PATCHED = "patched"  # a JSON patch or JSON merge patch applied to the stored object
    STRATEGIC = "strategic"  # a strategic merge patch applied: converted from a map, not decoded
    APPLY = "apply"  # a server-side apply patch


def undecodable(resource: ResourceInfo, detail: str) -> errors.BadRequest:
    """The 400 upstream answers for a body its decoder refuses (`transformDecodeError`)."""
    kind = resource.kind
    return errors.BadRequest(f'{kind} in version "{resource.version}" cannot be handled as a {kind}: {detail}')


def type_error(value: Any, struct: str, path: str, go_type: str) -> str:
    """Go's `UnmarshalTypeError` text for `value` in the field `path` (JSON names from the top) of `struct`."""
    return f"json: cannot unmarshal {golang.json_type(value)} into Go struct field {struct}.{path} of type {go_type}"


# ---- walking ------------------------------------------------------------------------------------------------------


class _Stop(Exception):
    """An error that ends the decoding at once (a self-decoding type's, or any of the converter's)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Walk:
    """The decoder's state on the slow pass: its rules, the error context, the first error saved."""

    __slots__ = ("convert", "first", "sort", "stack", "struct", "whole_floats")

    def __init__(self, source: Source) -> None:
        self.convert = source is Source.STRATEGIC
        self.sort = source is Source.YAML
        self.whole_floats = source is Source.YAML
        self.struct = ""
        self.stack: list[str] = []
        self.first: str | None = None

    def message(self, what: str, go_type: str) -> str:
        """`what` is the JSON type name, or `number <literal>`."""
        into = f"Go struct field {self.struct}.{'.'.join(self.stack)}" if self.stack else "Go value"
        return f"json: cannot unmarshal {what} into {into} of type {go_type}"

    def type_error(self, what: str, go_type: str) -> None:
        """An `UnmarshalTypeError` the decoder saves and carries on after."""
        if self.first is None:
            self.first = self.message(what, go_type)

    def saved(self, message: str) -> None:
        if self.first is None:
            self.first = message

    def fatal(self, what: str, go_type: str) -> NoReturn:
        """An `UnmarshalTypeError` returned by a self-decoding type: it ends decoding, with the context added."""
        raise _Stop(self.message(what, go_type))

    @staticmethod
    def stop(message: str) -> NoReturn:
        raise _Stop(message)

    def literal(self, number: float) -> str:
        """A float as the decoder saw it: the body's literal (Python's rendering of it), or Go's own encoding once
        YAML or a map conversion has rewritten it."""
        return golang.json_float(number) if self.whole_floats or self.convert else repr(number)


def _kind(value: Any) -> str:
    """The reflect kind of a value in an unstructured map, as the converter names it."""
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "slice"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    return "float64" if isinstance(value, float) else "string"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class _Node:
    """One Go type: `ok` is the fast yes/no; `walk` applies the decoder's rules and returns the (possibly
    normalized) value. A struct field of the type given null is dropped (Go leaves it at its zero value, which it
    does not write back), unless the type writes its zero value as null itself (`keeps_null`)."""

    __slots__ = ("go",)
    keeps_null = False

    def __init__(self, go: str) -> None:
        self.go = go

    def ok(self, value: Any) -> bool:
        raise NotImplementedError

    def walk(self, value: Any, w: _Walk) -> Any:
        raise NotImplementedError

    def mismatch(self, value: Any, w: _Walk, restore: str = "") -> None:
        """A value of the wrong JSON type: saved (decoder) or the end (converter, whose words `restore` gives)."""
        if w.convert:
            w.stop(restore or f"unrecognized type: {self.go}")
        w.type_error(golang.json_type(value), self.go)


class _Any(_Node):
    """RawExtension, FieldsV1, a schemaless object: anything decodes."""

    __slots__ = ()
    keeps_null = True

    def ok(self, value: Any) -> bool:
        return True

    def walk(self, value: Any, w: _Walk) -> Any:
        return value


class _Struct(_Node):
    __slots__ = ("fields", "name")

    def __init__(self, go: str, name: str) -> None:
        super().__init__(go)
        self.name = name
        self.fields: dict[str, _Node] = {}

    def ok(self, value: Any) -> bool:
        if type(value) is not dict:
            return value is None
        fields = self.fields
        for key, item in value.items():
            node = fields.get(key)
            if node is None:
                continue
            if item is None:
                if not node.keeps_null:
                    return False  # to be dropped, on the slow pass
            elif not node.ok(item):
                return False
        return True

    def walk(self, value: Any, w: _Walk) -> Any:
        if value is None:
            return value
        if not isinstance(value, dict):
            self.mismatch(value, w, f"cannot restore struct from: {_kind(value)}")
            return value
        outer, depth = w.struct, len(w.stack)
        for key in sorted(value, key=str) if w.sort else list(value):
            node = self.fields.get(key)
            if node is None:
                continue
            if value[key] is None:
                if not node.keeps_null:
                    del value[key]
                continue
            w.struct = self.name
            w.stack.append(key)
            item = value[key]
            new = node.walk(item, w)
            if new is not item:
                value[key] = new
            del w.stack[depth:]
            w.struct = outer
        return value


class _Slice(_Node):
    __slots__ = ("elem",)

    def __init__(self, elem: _Node, go: str = "") -> None:
        super().__init__(go or f"[]{elem.go}")
        self.elem = elem

    def ok(self, value: Any) -> bool:
        if type(value) is not list:
            return value is None
        elem = self.elem
        return all(elem.ok(item) for item in value)

    def walk(self, value: Any, w: _Walk) -> Any:
        if value is None:
            return value
        if not isinstance(value, list):
            self.mismatch(value, w, f"cannot restore slice from {_kind(value)}")
            return value
        for index, item in enumerate(value):
            new = self.elem.walk(item, w)
            if new is not item:
                value[index] = new
        return value


class _Map(_Node):
    __slots__ = ("elem",)

    def __init__(self, elem: _Node, go: str = "") -> None:
        super().__init__(go or f"map[string]{elem.go}")
        self.elem = elem

    def ok(self, value: Any) -> bool:
        if type(value) is not dict:
            return value is None
        elem = self.elem
        return all(elem.ok(item) for item in value.values())

    def walk(self, value: Any, w: _Walk) -> Any:
        if value is None:
            return value
        if not isinstance(value, dict):
            self.mismatch(value, w, f"cannot restore map from {_kind(value)}")
            return value
        for key in sorted(value, key=str) if w.sort else list(value):
            item = value[key]
            new = self.elem.walk(item, w)
            if new is not item:
                value[key] = new
        return value


class _String(_Node):
    __slots__ = ()

    def ok(self, value: Any) -> bool:
        return type(value) is str or value is None

    def walk(self, value: Any, w: _Walk) -> Any:
        if value is None or isinstance(value, str | date):  # a YAML timestamp is a string to Go's YAML reader
            return value
        if w.convert and isinstance(value, int) and not isinstance(value, bool):
            w.stop(f"cannot convert int64 to {self.go}")
        self.mismatch(value, w, "unrecognized type: string")
        return value


class _Bool(_Node):
    __slots__ = ()

    def ok(self, value: Any) -> bool:
        return type(value) is bool or value is None

    def walk(self, value: Any, w: _Walk) -> Any:
        if value is None or isinstance(value, bool):
            return value
        self.mismatch(value, w, "unrecognized type: bool")
        return value


class _Float(_Node):
    __slots__ = ()

    def ok(self, value: Any) -> bool:
        return value is None or _is_number(value)

    def walk(self, value: Any, w: _Walk) -> Any:
        if not self.ok(value):
            self.mismatch(value, w)
        return value


class _Int(_Node):
    __slots__ = ("high", "low")

    def __init__(self, go: str, bits: int, *, unsigned: bool = False) -> None:
        super().__init__(go)
        self.low: int = 0 if unsigned else -(2 ** (bits - 1))
        self.high: int = self.low + 2**bits - 1

    def ok(self, value: Any) -> bool:
        if type(value) is int:
            return self.low <= value <= self.high
        return value is None

    def wrap(self, number: int) -> int:
        """What Go's conversion of an int64 to this type keeps (the converter does not check the range)."""
        span = self.high - self.low + 1
        return (number - self.low) % span + self.low

    def walk(self, value: Any, w: _Walk) -> Any:
        if value is None or self.ok(value):
            return value
        if not _is_number(value):
            self.mismatch(value, w)
            return value
        if isinstance(value, float):
            whole = value.is_integer()
            if w.convert:
                if not whole:
                    w.stop(f"cannot convert float64 to {self.go}")
                return self.wrap(int(value))
            if w.whole_floats and whole and self.low <= value <= self.high:
                return int(value)
            w.type_error(f"number {w.literal(value)}", self.go)
            return value
        if w.convert:
            return self.wrap(value)
        w.type_error(f"number {value}", self.go)
        return value


_UINT8 = _Int("uint8", 8, unsigned=True)


class _Bytes(_Node):
    """`[]byte`: base64 text, or (as Go's decoder also takes) an array of byte values."""

    __slots__ = ()

    def ok(self, value: Any) -> bool:
        if type(value) is str:
            return golang.base64_error(value) is None
        return value is None

    def walk(self, value: Any, w: _Walk) -> Any:
        if value is None:
            return value
        if isinstance(value, str):
            offset = golang.base64_error(value)
            if offset is not None:
                problem = f"illegal base64 data at input byte {offset}"
                if w.convert:
                    w.stop(f"error decoding from json: {problem}")
                w.saved(problem)
            return value
        if not isinstance(value, list):
            self.mismatch(value, w, f"cannot restore slice from {_kind(value)}")
            return value
        items = [_UINT8.walk(item, w) for item in value]
        if all(item is None or _UINT8.ok(item) for item in items):
            return base64.b64encode(bytes(item or 0 for item in items)).decode()
        return value


class _IntOrString(_Node):
    """`intstr.IntOrString`: its `UnmarshalJSON` takes a string, or decodes anything else into an int32."""

    __slots__ = ()

    def ok(self, value: Any) -> bool:
        return type(value) is str or value is None or _INT32.ok(value)

    def walk(self, value: Any, w: _Walk) -> Any:
        if self.ok(value):
            return value
        what = golang.json_type(value)
        rewritten = isinstance(value, float) and (w.whole_floats or w.convert) and value.is_integer()
        if rewritten and _INT32.ok(int(value)):
            return int(value)  # Go wrote it as an integer before decoding it
        if _is_number(value):
            what = f"number {w.literal(value) if isinstance(value, float) else value}"
        if w.convert:
            w.stop(f"json: cannot unmarshal {what} into Go value of type int32")
        w.fatal(what, "int32")


_INT32 = _Int("int32", 32)


class _Quantity(_Node):
    """`resource.Quantity`: its `UnmarshalJSON` parses a string's content or a number's literal."""

    __slots__ = ()

    def ok(self, value: Any) -> bool:
        if value is None:
            return True
        try:
            parse_quantity(value)
        except QuantityError:
            return False
        return True

    def walk(self, value: Any, w: _Walk) -> Any:
        if value is not None:
            try:
                parse_quantity(value)
            except QuantityError as err:
                w.stop(str(err))
        return value


# The shape of the times that parse (most do), checked without the Go port; anything else goes to the port.
_TIME_SHAPE = (
    r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d{fraction}(Z|[+-][01]\d:[0-5]\d)"
)
_TIMES = {
    golang.RFC3339: re.compile(_TIME_SHAPE.replace("{fraction}", r"(\.\d+)?"), re.ASCII),
    golang.RFC3339_MICRO: re.compile(_TIME_SHAPE.replace("{fraction}", r"\.\d{6}"), re.ASCII),
}


class _Time(_Node):
    """metav1 `Time` (RFC 3339) and `MicroTime` (RFC 3339 with microseconds): their `UnmarshalJSON` decodes a
    string, then `time.Parse`s it. A zero time is written as null (`creationTimestamp: null`), so null stays."""

    __slots__ = ("layout", "shape")
    keeps_null = True

    def __init__(self, layout: str) -> None:
        super().__init__("string")
        self.layout = layout
        self.shape = _TIMES[layout]

    def ok(self, value: Any) -> bool:
        if type(value) is str:
            return self.shape.fullmatch(value) is not None and int(value[8:10]) <= 28
        return value is None

    def walk(self, value: Any, w: _Walk) -> Any:
        if value is None or isinstance(value, date):  # a YAML timestamp: Go's YAML reader keeps it as text
            return value
        if isinstance(value, str):
            problem = golang.time_parse_error(value, self.layout)
            if problem is not None:
                w.stop(problem)
            return value
        if w.convert:
            w.stop(f"json: cannot unmarshal {golang.json_type(value)} into Go value of type string")
        w.fatal(golang.json_type(value), "string")


# ---- compiling the definitions ------------------------------------------------------------------------------------

# Go's named types where the OpenAPI definitions say only `string` (or a list or map of strings): the common fields,
# keyed by (struct, JSON field); for a list or a map, the element's type. The rest are reported as `string`.
_NAMED: dict[tuple[str, str], str] = {
    ("ObjectMeta", "uid"): "types.UID",
    ("OwnerReference", "uid"): "types.UID",
    ("ObjectReference", "uid"): "types.UID",
    ("LabelSelectorRequirement", "operator"): "v1.LabelSelectorOperator",
    ("ManagedFieldsEntry", "operation"): "v1.ManagedFieldsOperationType",
    ("Container", "imagePullPolicy"): "v1.PullPolicy",
    ("Container", "terminationMessagePolicy"): "v1.TerminationMessagePolicy",
    ("Container", "restartPolicy"): "v1.ContainerRestartPolicy",
    ("ContainerPort", "protocol"): "v1.Protocol",
    ("ServicePort", "protocol"): "v1.Protocol",
    ("EndpointPort", "protocol"): "v1.Protocol",
    ("NetworkPolicyPort", "protocol"): "v1.Protocol",
    ("PodSpec", "restartPolicy"): "v1.RestartPolicy",
    ("PodSpec", "dnsPolicy"): "v1.DNSPolicy",
    ("PodSpec", "preemptionPolicy"): "v1.PreemptionPolicy",
    ("PodStatus", "phase"): "v1.PodPhase",
    ("PodStatus", "qosClass"): "v1.PodQOSClass",
    ("PodCondition", "type"): "v1.PodConditionType",
    ("ServiceSpec", "type"): "v1.ServiceType",
    ("ServiceSpec", "sessionAffinity"): "v1.ServiceAffinity",
    ("ServiceSpec", "externalTrafficPolicy"): "v1.ServiceExternalTrafficPolicy",
    ("ServiceSpec", "internalTrafficPolicy"): "v1.ServiceInternalTrafficPolicy",
    ("ServiceSpec", "ipFamilies"): "v1.IPFamily",
    ("ServiceSpec", "ipFamilyPolicy"): "v1.IPFamilyPolicy",
    ("Secret", "type"): "v1.SecretType",
    ("NamespaceSpec", "finalizers"): "v1.FinalizerName",
    ("NamespaceStatus", "phase"): "v1.NamespacePhase",
    ("Taint", "effect"): "v1.TaintEffect",
    ("Toleration", "effect"): "v1.TaintEffect",
    ("Toleration", "operator"): "v1.TolerationOperator",
    ("NodeSelectorRequirement", "operator"): "v1.NodeSelectorOperator",
    ("NodeAddress", "type"): "v1.NodeAddressType",
    ("NodeCondition", "type"): "v1.NodeConditionType",
    ("Capabilities", "add"): "v1.Capability",
    ("Capabilities", "drop"): "v1.Capability",
    ("HTTPGetAction", "scheme"): "v1.URIScheme",
    ("HostPathVolumeSource", "type"): "v1.HostPathType",
    ("PersistentVolumeClaimSpec", "accessModes"): "v1.PersistentVolumeAccessMode",
    ("PersistentVolumeClaimSpec", "volumeMode"): "v1.PersistentVolumeMode",
    ("PersistentVolumeSpec", "accessModes"): "v1.PersistentVolumeAccessMode",
    ("PersistentVolumeSpec", "volumeMode"): "v1.PersistentVolumeMode",
    ("PersistentVolumeSpec", "persistentVolumeReclaimPolicy"): "v1.PersistentVolumeReclaimPolicy",
    ("LimitRangeItem", "type"): "v1.LimitType",
    ("ResourceQuotaSpec", "scopes"): "v1.ResourceQuotaScope",
    ("DeploymentStrategy", "type"): "v1.DeploymentStrategyType",
    ("StatefulSetSpec", "podManagementPolicy"): "v1.PodManagementPolicyType",
    ("StatefulSetUpdateStrategy", "type"): "v1.StatefulSetUpdateStrategyType",
    ("DaemonSetUpdateStrategy", "type"): "v1.DaemonSetUpdateStrategyType",
    ("DeploymentCondition", "type"): "v1.DeploymentConditionType",
    ("CronJobSpec", "concurrencyPolicy"): "v1.ConcurrencyPolicy",
    ("JobSpec", "completionMode"): "v1.CompletionMode",
    ("JobSpec", "podReplacementPolicy"): "v1.PodReplacementPolicy",
    ("JobCondition", "type"): "v1.JobConditionType",
    ("NetworkPolicySpec", "policyTypes"): "v1.PolicyType",
    ("HTTPIngressPath", "pathType"): "v1.PathType",
    ("EndpointSlice", "addressType"): "v1.AddressType",
    ("CertificateSigningRequestSpec", "usages"): "v1.KeyUsage",
    ("CertificateSigningRequestCondition", "type"): "v1.RequestConditionType",
    ("ValidatingWebhook", "failurePolicy"): "v1.FailurePolicyType",
    ("ValidatingWebhook", "sideEffects"): "v1.SideEffectClass",
    ("ValidatingWebhook", "matchPolicy"): "v1.MatchPolicyType",
    ("MutatingWebhook", "failurePolicy"): "v1.FailurePolicyType",
    ("MutatingWebhook", "sideEffects"): "v1.SideEffectClass",
    ("MutatingWebhook", "matchPolicy"): "v1.MatchPolicyType",
    ("MutatingWebhook", "reinvocationPolicy"): "v1.ReinvocationPolicyType",
    ("RuleWithOperations", "operations"): "v1.OperationType",
    ("RuleWithOperations", "scope"): "v1.ScopeType",
}
# Conditions' `status` is core's ConditionStatus wherever a condition has one (meta's Condition: its own).
_CONDITION_STATUS = frozenset(
    {"PodCondition", "NodeCondition", "DeploymentCondition", "ReplicaSetCondition", "StatefulSetCondition",
     "DaemonSetCondition", "JobCondition", "NamespaceCondition", "PersistentVolumeClaimCondition",
     "ReplicationControllerCondition", "CertificateSigningRequestCondition", "ComponentCondition", "Condition"}
)  # fmt: skip
# Named maps and lists: (struct, field) -> (the field's Go type, its element's).
_NAMED_COLLECTIONS: dict[tuple[str, str], tuple[str, str]] = {
    ("UserInfo", "extra"): ("map[string]v1.ExtraValue", "v1.ExtraValue"),
    ("SubjectAccessReviewSpec", "extra"): ("map[string]v1.ExtraValue", "v1.ExtraValue"),
    ("CertificateSigningRequestSpec", "extra"): ("map[string]v1.ExtraValue", "v1.ExtraValue"),
    ("PersistentVolumeClaimStatus", "allocatedResourceStatuses"): (
        "map[v1.ResourceName]v1.ClaimResourceStatus",
        "v1.ClaimResourceStatus",
    ),
}

_ANY = _Any("interface {}")
_SCALARS: dict[str, _Node] = {}


def _scalar(kind: type[_Node], go: str) -> _Node:
    """Scalar nodes are shared: one per Go type name."""
    node = _SCALARS.get(go)
    if node is None:
        node = _SCALARS[go] = kind(go)
    return node


class _Compiler:
    """Definitions -> nodes, each definition once (a struct's node is registered before its fields are compiled, so
    a type that refers to itself compiles)."""

    def __init__(self, schemas: dict[str, definitions.Schema]) -> None:
        self.schemas = schemas
        self.nodes: dict[str, _Node] = {
            definitions.TIME: _Time(golang.RFC3339),
            definitions.MICRO_TIME: _Time(golang.RFC3339_MICRO),
            definitions.INT_OR_STRING: _IntOrString("intstr.IntOrString"),
            definitions.QUANTITY: _Quantity("resource.Quantity"),
        }

    def definition(self, name: str) -> _Node:
        node = self.nodes.get(name)
        if node is not None:
            return node
        schema = self.schemas.get(name, {})
        properties = schema.get("properties")
        if properties is None or schema.get("x-kubernetes-preserve-unknown-fields"):
            self.nodes[name] = _ANY
            return _ANY
        short = name.rsplit(".", 1)[-1]
        struct = _Struct(".".join(name.rsplit(".", 2)[-2:]), short)
        self.nodes[name] = struct
        struct.fields = {field: self.field(prop, short, field) for field, prop in properties.items()}
        return struct

    def field(self, schema: definitions.Schema, struct: str, field: str) -> _Node:
        if "$ref" in schema:
            return self.definition(schema["$ref"])
        kind = schema.get("type")
        named = _NAMED_COLLECTIONS.get((struct, field))
        if kind == "array":
            elem = self.field(schema["items"], struct, field)
            return _Slice(elem, named[0] if named else "")
        if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
            elem = self.field(schema["additionalProperties"], struct, field)
            if named:
                elem = _Slice(elem.elem, named[1]) if isinstance(elem, _Slice) else _scalar(_String, named[1])
            go = named[0] if named else ("v1.ResourceList" if isinstance(elem, _Quantity) else "")
            return _Map(elem, go)
        return self.scalar(schema, struct, field)

    @staticmethod
    def scalar(schema: definitions.Schema, struct: str, field: str) -> _Node:
        kind, fmt = schema.get("type"), schema.get("format")
        if kind == "string":
            if fmt == "byte":
                return _scalar(_Bytes, "[]uint8")
            if field == "status" and struct in _CONDITION_STATUS:
                return _scalar(_String, "v1.ConditionStatus")
            return _scalar(_String, _NAMED.get((struct, field), "string"))
        if kind == "boolean":
            return _scalar(_Bool, "bool")
        if kind == "integer":
            return _INT64 if fmt == "int64" else _INT32
        if kind == "number":
            return _scalar(_Float, "float64")
        return _ANY


_INT64 = _Int("int64", 64)
_compiler: _Compiler | None = None
_KINDS: dict[tuple[str, str], _Node | None] = {}


def _kind_node(api_version: str, kind: str) -> _Node | None:
    """The compiled node of a served kind (None for kinds the definitions do not describe: custom resources)."""
    global _compiler
    key = (api_version, kind)
    if key not in _KINDS:
        kinds, schemas = definitions.schema_definitions()
        if _compiler is None:
            _compiler = _Compiler(schemas)
        name = kinds.get(key)
        _KINDS[key] = _compiler.definition(name) if name is not None else None
    return _KINDS[key]


# ---- the check ----------------------------------------------------------------------------------------------------


def problem(resource: ResourceInfo, obj: dict[str, Any], source: Source = Source.JSON) -> str | None:
    """What upstream's decoding of `obj` (from `source`) says is wrong with its types, or None. Values the decoding
    rewrites (a YAML `3.0` for an integer) are rewritten in place."""
    node = _kind_node(resource.api_version, resource.kind)
    if node is None or node.ok(obj):
        return None
    walk = _Walk(source)
    try:
        node.walk(obj, walk)
    except _Stop as stop:
        return stop.message
    return walk.first


def check(resource: ResourceInfo, obj: dict[str, Any], source: Source = Source.JSON, *, patch: bytes = b"") -> None:
    """Raise what upstream answers when decoding `obj` fails on a type: 400 for a body, 422 for a patch's result
    (`patch` is the strategic merge patch's body, which that answer quotes)."""
    found = problem(resource, obj, source)
    if found is None:
        return
    if source is Source.PATCHED:
        raise _patch_invalid(orjson.dumps(obj).decode(), found)
    if source is Source.STRATEGIC:
        try:
            quoted = golang.format_value(orjson.loads(patch))
        except orjson.JSONDecodeError:
            quoted = patch.decode("utf-8", "replace")
        raise _patch_invalid(quoted, found)
    raise undecodable(resource, found)


def _patch_invalid(value: str, detail: str) -> errors.Invalid:
    """`errors.NewInvalid(schema.GroupKind{}, "", field.Invalid(field.NewPath("patch"), value, detail))`: no kind and
    no name, hence the message's odd start."""
    cause = errors.invalid("patch", value, detail)
    return errors.Invalid(f' "" is invalid: {cause}', details={"causes": [cause.cause()]})
