"""The generated protobuf schema (tinykube/api/protobuf_messages.py) against the served kinds, the kubernetes
Python client's models, and an encoder driven by the same table; and tools/protobuf_messages.py's rules.

The encoder writes what gogo-protobuf writes: every field that is set, and (`gogo=True`) a zero for each unset
non-pointer scalar; the decoder must turn that back into the JSON object.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import struct
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import kubernetes.client.models
import pytest

from tests.api.test_protobuf import envelope, int_or_str, meta, msg, num, text, varint
from tinykube.api import protobuf
from tinykube.api.protobuf import decode
from tinykube.api.resources import RESOURCES

SCHEMA = protobuf._SCHEMA
TIME = "2024-01-02T03:04:05Z"
MICRO_TIME = "2024-01-02T03:04:05.123456Z"

# --------------------------------------------------------------------------------------------------
# Coverage
# --------------------------------------------------------------------------------------------------


def test_every_served_kind_has_a_message() -> None:
    """All but the resource metrics (tinykube answers them itself, in JSON only; README "differs")."""
    supported = set(protobuf.supported_kinds())
    missing = [(r.api_version, r.kind) for r in RESOURCES if (r.api_version, r.kind) not in supported]
    assert missing == [
        ("metrics.k8s.io/v1beta1", "NodeMetrics"),
        ("metrics.k8s.io/v1beta1", "PodMetrics"),
    ]


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("autoscaling/v1", "Scale"),
        ("authentication.k8s.io/v1", "TokenRequest"),
        ("policy/v1", "Eviction"),
        ("v1", "Binding"),
        ("meta.k8s.io/v1", "DeleteOptions"),
    ],
)
def test_subresource_bodies_have_a_message(api_version: str, kind: str) -> None:
    assert (api_version, kind) in protobuf.supported_kinds()


def test_every_message_is_reachable_from_a_kind() -> None:
    """The generator emits only what the kinds need."""
    seen: set[str] = set()
    pending = [*protobuf._KINDS.values(), "DeleteOptions"]
    while pending:
        name = pending.pop()
        if name not in seen:
            seen.add(name)
            pending.extend(f.type for f in SCHEMA[name].values() if f.type in SCHEMA)
    assert seen == set(SCHEMA)


# --------------------------------------------------------------------------------------------------
# JSON names against the kubernetes Python client (generated from the same API, by other means)
# --------------------------------------------------------------------------------------------------


def _model(message: str) -> Any:
    """The client's model of a table message: V1Pod, V2HorizontalPodAutoscaler, EventsV1Event, ..."""
    if "." in message:
        group, version, name = message.split(".")
        candidates = [version.upper() + name, group.capitalize() + version.capitalize() + name]
    else:
        candidates = ["V1" + message, "CoreV1" + message]
    return next(
        (getattr(kubernetes.client.models, c) for c in candidates if hasattr(kubernetes.client.models, c)), None
    )


def _json_names(message: str) -> set[str]:
    """A message's JSON field names, those of its inlined structs included."""
    names: set[str] = set()
    for field in SCHEMA[message].values():
        names |= {field.name} if field.name else _json_names(field.type)
    return names


def test_json_names_match_the_python_client_models() -> None:
    modeled = {message: model for message in SCHEMA if (model := _model(message)) is not None}
    # Without a model: only the structs JSON inlines (VolumeSource, ProbeHandler, ...), which have no schema, the
    # messages whose JSON is not an object (JSONSchemaPropsOr*: `object` to the client), and empty ones
    # (CustomResourceSubresourceStatus: `object` too).
    inlined = {f.type for fields in SCHEMA.values() for f in fields.values() if not f.name}
    unmodeled = inlined | set(protobuf._FORMS) | {message for message, fields in SCHEMA.items() if not fields}
    assert set(SCHEMA) - set(modeled) <= unmodeled
    mismatches = {
        message: sorted(_json_names(message) - set(model.attribute_map.values()))
        for message, model in modeled.items()
        if _json_names(message) - set(model.attribute_map.values())
    }
    assert mismatches == {}


# --------------------------------------------------------------------------------------------------
# A table-driven encoder, and objects that set every field
# --------------------------------------------------------------------------------------------------


def _seconds(value: str) -> tuple[int, int]:
    moment = datetime.fromisoformat(value)
    return int(moment.timestamp()), moment.microsecond * 1000


def _single(number: int, kind: str, value: Any, gogo: bool = False) -> bytes:
    """One value of `kind` as field `number`."""
    if kind == "str":
        return text(number, value)
    if kind in ("int", "bool"):
        return num(number, value)
    if kind == "bytes":
        return text(number, base64.b64decode(value))
    if kind in ("Time", "MicroTime"):
        if value is None:
            return msg(number)
        seconds, nanos = _seconds(value)  # gogo writes a zero nanos too
        return msg(number, num(1, seconds), *([num(2, nanos)] if nanos or gogo else []))
    if kind == "Quantity":
        return msg(number, text(1, value))
    if kind == "IntOrString":
        return int_or_str(number, value)
    if kind in ("FieldsV1", "RawExtension"):
        return msg(number, *([] if value is None else [text(1, json.dumps(value))]))
    if kind == "JSON":  # the raw value as Go read it from compact JSON
        return msg(number, *([] if value is None else [text(1, _compact(value))]))
    if kind == "float":
        return varint(number << 3 | 1) + struct.pack("<d", value)
    if kind == "StringList":
        return msg(number, *(text(1, item) for item in value))
    if kind in protobuf._FORMS:
        return msg(number, _form(kind, value, gogo))
    return msg(number, encode(kind, value, gogo))


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _form(message: str, value: Any, gogo: bool) -> bytes:
    """The fields of a JSONSchemaPropsOr* message from its JSON form (the inverse of apiextensions' marshal.go):
    a schema is field `schema`, a list of schemas `jSONSchemas`, a list of strings `property`, a bool `allows`
    (which gogo writes always, and is true beside a schema)."""
    fields = {field.name: (number, field) for number, field in SCHEMA[message].items()}
    schema_number, schema = fields["schema"]
    if isinstance(value, dict):
        prefix = num(fields["allows"][0], True) if "allows" in fields else b""
        return prefix + msg(schema_number, encode(schema.type, value, gogo))
    if isinstance(value, bool):
        return num(fields["allows"][0], value)
    if value is None:
        return b""
    if "property" in fields:
        return b"".join(text(fields["property"][0], item) for item in value)
    return b"".join(msg(fields["jSONSchemas"][0], encode(schema.type, item, gogo)) for item in value)


def _zero(number: int, kind: str) -> bytes:
    return text(number, "") if kind == "str" else num(number, 0)


def encode(message: str, obj: dict[str, Any], gogo: bool = False) -> bytes:
    """`obj` (a JSON object) as the protobuf message `message`, fields in number order."""
    out = b""
    for number, field in sorted(SCHEMA[message].items()):
        if not field.name:  # an inlined struct: its fields are the object's own
            out += msg(number, encode(field.type, obj, gogo))
        elif obj.get(field.name) is not None or (field.type in ("Time", "MicroTime") and field.name in obj):
            value = obj[field.name]
            if field.is_map:
                out += b"".join(msg(number, text(1, k), _single(2, field.type, v, gogo)) for k, v in value.items())
            elif field.repeated:
                out += b"".join(_single(number, field.type, item, gogo) for item in value)
            else:
                out += _single(number, field.type, value, gogo)
        elif gogo and field.type in ("str", "int", "bool") and not (field.repeated or field.is_map or field.keep_zero):
            out += _zero(number, field.type)  # a non-pointer scalar: gogo writes its zero; JSON's omitempty drops it
    return out


_SAMPLES: dict[str, Any] = {
    "str": "s",
    "int": -7,
    "bool": True,
    "bytes": base64.b64encode(b"\x00\xff").decode(),
    "Time": TIME,
    "MicroTime": MICRO_TIME,
    "Quantity": "1500m",
    "FieldsV1": {"f:metadata": {"f:name": {}}},
    "RawExtension": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}},
    "StringList": ["a", "b"],
    "float": 2.5,
    "JSON": {"list": [1, 2.5, "x", True, None], "n": None},
    # JSONSchemaPropsOr*: the form that holds no schema (their schema would be the message on the path again)
    "SchemaOrArray": [{}],
    "SchemaOrBool": True,
    "SchemaOrStringArray": ["a", "b"],
}


def full(message: str, every: int = 1, path: frozenset[str] = frozenset()) -> dict[str, Any]:
    """An object of `message` with a value in every field (every `every`-th field by number, if > 1), lists of
    two, maps of one entry; but none in a field of a message already on the way here (JSONSchemaProps nests)."""
    obj: dict[str, Any] = {}
    path = path | {message}
    for number, field in SCHEMA[message].items():
        if not field.name:
            obj.update(full(field.type, every, path))
            continue
        if number % every or field.type in path:
            continue
        if field.type in protobuf._FORMS:
            value: Any = _SAMPLES[protobuf._FORMS[field.type]]
        elif field.type in SCHEMA:
            value = full(field.type, every, path)
        elif field.type == "IntOrString":
            value = 8080 if number % 2 else "http"
        else:
            value = _SAMPLES[field.type]
        obj[field.name] = {"key": value} if field.is_map else [value, value] if field.repeated else value
    return obj


def with_nulls(message: str, obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as JSON shows it after a protobuf trip: unset lists, maps and []byte without omitempty are null."""
    out = dict(obj)
    for field in SCHEMA[message].values():
        if not field.name:
            out.update(with_nulls(field.type, obj))
        elif (
            field.name in out
            and field.type in SCHEMA
            and field.type not in protobuf._FORMS
            and out[field.name] is not None
        ):
            value = out[field.name]
            if field.is_map:
                out[field.name] = {k: with_nulls(field.type, v) for k, v in value.items()}
            elif field.repeated:
                out[field.name] = [with_nulls(field.type, v) for v in value]
            else:
                out[field.name] = with_nulls(field.type, value)
    for name in protobuf._NULLS[message]:
        out.setdefault(name, None)
    return out


KINDS = sorted(protobuf._KINDS.items())


@pytest.mark.parametrize(("api_version", "kind", "message"), [(*k, m) for k, m in KINDS])
def test_an_object_with_every_field_set_decodes_to_itself(api_version: str, kind: str, message: str) -> None:
    obj = full(message)
    assert decode(envelope(api_version, kind, encode(message, obj))) == {"kind": kind, "apiVersion": api_version, **obj}


@pytest.mark.parametrize("every", [2, 3])
@pytest.mark.parametrize(("api_version", "kind", "message"), [(*k, m) for k, m in KINDS])
def test_gogo_zeros_of_unset_fields_decode_as_json_shows_them(
    api_version: str, kind: str, message: str, every: int
) -> None:
    """Half (a third) of the fields set; gogo's zeros for the others are dropped, nil lists without omitempty
    are null."""
    obj = full(message, every)
    body = envelope(api_version, kind, encode(message, obj, gogo=True))
    assert decode(body) == {"kind": kind, "apiVersion": api_version, **with_nulls(message, obj)}


def test_the_encoder_writes_what_kubectl_writes() -> None:
    """The captured `kubectl create priorityclass zero --value=0` body, re-encoded from its JSON."""
    from tests.api.test_protobuf_kubectl import GENERATORS

    for param in GENERATORS:
        if param.id == "priorityclass-zero":
            _command, body, expected = param.values
            assert isinstance(expected, dict) and isinstance(body, str)
            api_version, kind = expected["apiVersion"], expected["kind"]
            obj = {k: v for k, v in expected.items() if k not in ("apiVersion", "kind")}
            ours = envelope(api_version, kind, encode(protobuf._KINDS[(api_version, kind)], obj, gogo=True))
            assert decode(ours) == decode(base64.b64decode(body)) == expected


# --------------------------------------------------------------------------------------------------
# Hand-built vectors for the types added with the generated table
# --------------------------------------------------------------------------------------------------


def test_eviction_with_delete_options() -> None:
    body = envelope(
        "policy/v1",
        "Eviction",
        meta(text(1, "web-1"), text(3, "default")),
        msg(2, num(1, 0), msg(2, text(1, "uid-1")), text(5, "All")),
    )
    assert decode(body) == {
        "kind": "Eviction",
        "apiVersion": "policy/v1",
        "metadata": {"name": "web-1", "namespace": "default", "creationTimestamp": None},
        "deleteOptions": {"gracePeriodSeconds": 0, "preconditions": {"uid": "uid-1"}, "dryRun": ["All"]},
    }


def test_controller_revision_data_is_embedded_json() -> None:
    patch = b'{"spec":{"template":{"$patch":"replace"}}}'
    body = envelope("apps/v1", "ControllerRevision", meta(text(1, "web-7d9")), msg(2, text(1, patch)), num(3, 2))
    assert decode(body) == {
        "kind": "ControllerRevision",
        "apiVersion": "apps/v1",
        "metadata": {"name": "web-7d9", "creationTimestamp": None},
        "data": {"spec": {"template": {"$patch": "replace"}}},
        "revision": 2,
    }
    empty = decode(envelope("apps/v1", "ControllerRevision", msg(2), num(3, 0)))
    assert empty == {"kind": "ControllerRevision", "apiVersion": "apps/v1", "data": None, "revision": 0}


def test_raw_extension_that_is_not_json_is_a_bad_request() -> None:
    with pytest.raises(protobuf.BadRequest, match="RawExtension is not JSON"):
        decode(envelope("apps/v1", "ControllerRevision", msg(2, text(1, b"k8s\x00"))))


def test_subject_access_review_extra_values_are_lists() -> None:
    """map<string, ExtraValue>, ExtraValue being a Go []string: JSON writes the bare lists."""
    spec = msg(
        2,
        msg(1, text(1, ""), text(2, "get"), text(3, ""), text(5, "pods")),
        text(3, "alice"),
        text(4, "devs"),
        msg(5, text(1, "scopes"), msg(2, text(1, "read"), text(1, "write"))),
        msg(5, text(1, "none"), msg(2)),  # no items: a nil ExtraValue, JSON's null
        msg(5, text(1, "unset")),  # no value at all: the same
        text(6, ""),
    )
    body = envelope("authorization.k8s.io/v1", "SubjectAccessReview", meta(), spec, msg(3, num(1, 1), num(4, 0)))
    obj = decode(body)
    assert obj["spec"] == {
        "resourceAttributes": {"verb": "get", "resource": "pods"},
        "user": "alice",
        "groups": ["devs"],
        "extra": {"scopes": ["read", "write"], "none": None, "unset": None},
    }
    assert obj["status"] == {"allowed": True}


def test_renamed_fields_take_their_json_names() -> None:
    """Seven 1.32 fields have another name in generated.proto than in JSON (`Webhooks`, `uID`, `aPIGroup`)."""
    webhook = msg(2, text(1, "hook.example.com"), msg(2, text(3, "https://hook")), text(6, "None"), text(8, "v1"))
    body = envelope("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", meta(text(1, "w")), webhook)
    assert decode(body)["webhooks"] == [
        {
            "name": "hook.example.com",
            "clientConfig": {"url": "https://hook"},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }
    ]
    token = envelope("authentication.k8s.io/v1", "TokenRequest", msg(2, msg(3, text(1, "Pod"), text(4, "u1"))))
    assert decode(token)["spec"]["boundObjectRef"] == {"kind": "Pod", "uid": "u1"}


# --------------------------------------------------------------------------------------------------
# tools/protobuf_messages.py: how it reads .proto files and Go structs, and the rules it applies
# --------------------------------------------------------------------------------------------------


@functools.cache
def _generator() -> Any:
    """tools/protobuf_messages.py, which is a script, not a package module."""
    path = Path(__file__).resolve().parents[2] / "tools" / "protobuf_messages.py"
    spec = importlib.util.spec_from_file_location("protobuf_messages_generator", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


PROTO = """
/* licence */
syntax = "proto2";

package k8s.io.api.demo.v1;

import "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto";

// A comment.
message Widget {
  optional .k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta metadata = 1;

  // +optional
  optional WidgetSpec spec = 2;
}

message WidgetSpec {
  optional int32 replicas = 1;
  optional int32 count = 2;
  optional string mode = 3;
  repeated string verbs = 4;
  repeated string tags = 5;
  map<string, Extra> extra = 6;
  optional Common common = 7;
  optional string Kind = 8;
}

message Common {
  optional bool enabled = 1;
}

message Extra {
  repeated string items = 1;
}
"""

GO = """
type Widget struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Spec WidgetSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"` // a comment {
}

type WidgetSpec struct {
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`
	Count int32 `json:"count" protobuf:"varint,2,opt,name=count"`
	Mode string `json:"mode,omitempty" protobuf:"bytes,3,opt,name=mode"`
	Verbs []string `json:"verbs" protobuf:"bytes,4,rep,name=verbs"`
	Tags []string `json:"tags,omitempty" protobuf:"bytes,5,rep,name=tags"`
	Extra map[string]Extra `json:"extra,omitempty" protobuf:"bytes,6,rep,name=extra"`
	Common `json:",inline" protobuf:"bytes,7,opt,name=common"`
	Kind string `json:"kind" protobuf:"bytes,8,opt,name=Kind"`
}

type Common struct {
	Enabled bool `json:"enabled,omitempty" protobuf:"varint,1,opt,name=enabled"`
}

type Extra []string
"""


def _demo_build(go: str = GO) -> dict[str, dict[int, tuple[str, str]]]:
    gen = _generator()
    package = gen.Package("api", "demo/v1", "k8s.io.api.demo.v1", "demo.v1.")
    proto_package, messages = gen.parse_proto(PROTO)
    structs, slices = gen.parse_go(go)
    meta_package = gen.PACKAGES["meta.k8s.io/v1"]
    loaded = {
        proto_package: gen.Loaded(package, messages, structs, slices),
        meta_package.proto: gen.Loaded(
            meta_package,
            {"ObjectMeta": [gen.ProtoField(1, "name", "string", False, False)]},
            {"ObjectMeta": {1: gen.GoField("string", "name", "name", True, False)}},
            {},
        ),
    }
    builder = gen.Builder(loaded)
    builder.add(proto_package, "Widget")
    assert builder.renamed == ["k8s.io.api.demo.v1.WidgetSpec.Kind = 8: kind"]
    result: dict[str, dict[int, tuple[str, str]]] = builder.messages
    return result


def test_generator_rules() -> None:
    assert _demo_build() == {
        "demo.v1.Widget": {1: ("metadata", "ObjectMeta"), 2: ("spec", "demo.v1.WidgetSpec")},
        "ObjectMeta": {1: ("name", "str")},
        "demo.v1.WidgetSpec": {
            1: ("replicas", "int!"),  # a pointer
            2: ("count", "int!"),  # no omitempty
            3: ("mode", "str"),
            4: ("verbs", "[]str!"),  # no omitempty: null when nil
            5: ("tags", "[]str"),
            6: ("extra", "{}StringList"),  # a Go []string type
            7: ("", "demo.v1.Common"),  # json:",inline"
            8: ("kind", "str!"),  # the JSON name, not generated.proto's
        },
        "demo.v1.Common": {1: ("enabled", "bool")},
    }


def test_generator_refuses_a_proto_field_without_a_go_field() -> None:
    with pytest.raises(ValueError, match=r"WidgetSpec.mode = 3: no Go field with that protobuf number"):
        _demo_build(GO.replace('protobuf:"bytes,3,opt,name=mode"', ""))


def test_generator_refuses_disagreeing_names() -> None:
    with pytest.raises(ValueError, match=r"WidgetSpec.count = 2: the Go field is 'counter' in protobuf"):
        _demo_build(GO.replace("name=count", "name=counter"))


def test_generator_reads_empty_structs_and_doubles_and_names_hand_written_json_forms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`type X struct{}` is a struct without fields; a proto double is `float`; a message of JSON_FORMS keeps
    its .proto field names (its Go fields have no json tag) and is listed with its form."""
    gen = _generator()
    monkeypatch.setitem(gen.JSON_FORMS, "k8s.io.api.demo.v1.OrBool", "SchemaOrBool")
    proto = """
package k8s.io.api.demo.v1;
message Schema {
  optional double maximum = 1;
  optional OrBool more = 2;
  optional Empty status = 3;
}
message OrBool {
  optional bool allows = 1;
  optional Schema schema = 2;
}
message Empty {
}
"""
    go = """
type Schema struct {
	Maximum *float64 `json:"maximum,omitempty" protobuf:"bytes,1,opt,name=maximum"`
	More *OrBool `json:"more,omitempty" protobuf:"bytes,2,opt,name=more"`
	Status *Empty `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}
type OrBool struct {
	Allows bool `protobuf:"varint,1,opt,name=allows"`
	Schema *Schema `protobuf:"bytes,2,opt,name=schema"`
}
type Empty struct{}
"""
    package = gen.Package("api", "demo/v1", "k8s.io.api.demo.v1", "demo.v1.")
    proto_package, messages = gen.parse_proto(proto)
    structs, slices = gen.parse_go(go)
    builder = gen.Builder({proto_package: gen.Loaded(package, messages, structs, slices)})
    builder.add(proto_package, "Schema")
    assert builder.messages == {
        "demo.v1.Schema": {1: ("maximum", "float!"), 2: ("more", "demo.v1.OrBool"), 3: ("status", "demo.v1.Empty")},
        "demo.v1.OrBool": {1: ("allows", "bool!"), 2: ("schema", "demo.v1.Schema")},
        "demo.v1.Empty": {},
    }
    assert builder.forms == {"demo.v1.OrBool": "SchemaOrBool"}
