"""Generate tinykube/api/protobuf_messages.py, the protobuf schema tinykube/api/protobuf.py decodes with.

Run by hand (not in CI) from the repository root, after a Kubernetes minor-version bump:

    python tools/protobuf_messages.py --api ../api --apimachinery ../apimachinery \\
        --kube-aggregator ../kube-aggregator --apiextensions-apiserver ../apiextensions-apiserver \\
        > tinykube/api/protobuf_messages.py
    python tools/protobuf_messages.py ... --check      # exit 1 if the module is not what the inputs give

Inputs: four upstream repositories, each either a git clone, read at one tag with ``git show <tag>:<path>`` (the
work tree and the checked-out branch do not matter), or the module directory the Go module proxy gives for that
tag (``go mod download -json k8s.io/api@v0.32.13`` prints it as ``Dir``; read as it is, ``--tag`` unused):

    https://github.com/kubernetes/api                      v0.32.13 (commit 67a30ffc59c51566a502318fe0275fed1af3fdb7)
    https://github.com/kubernetes/apimachinery             v0.32.13 (commit 59e9003f02d6f0c8fff53719a7a0604ec82ee9a9)
    https://github.com/kubernetes/kube-aggregator          v0.32.13 (commit 6582b6ec0f652811aff504ee76dfe6773dc62dc2)
    https://github.com/kubernetes/apiextensions-apiserver  v0.32.13 (module k8s.io/apiextensions-apiserver)

v0.32.13 is the newest v0.32 tag (release-1.32 branch) of all four when this was written; the API types do not
change within a minor version, so any v0.32.x gives the same table. apiextensions.k8s.io is served in v1 only
(v1beta1 was removed in 1.22), so only pkg/apis/apiextensions/v1 is read.

From each API package (``PACKAGES``) two files are read:

* ``generated.proto``: the messages, their field numbers, names and types. This is the schema.
* the package's Go structs (``types.go`` and its siblings): only their struct tags and field types, for what
  the .proto file cannot say (see below); each field is matched to the .proto by its number, and the generator
  fails if the two disagree on a field's name or existence.

What the Go declarations decide, per field:

* ``!`` on a scalar (keep a zero that is on the wire): the Go field is a pointer, or its ``json`` tag has no
  ``omitempty``. gogo-protobuf writes a non-pointer scalar even when it is zero; JSON shows that zero only
  without ``omitempty``. A pointer scalar is on the wire only when set, and JSON shows it whenever it is set.
* ``!`` on a list or map (and on ``bytes``, a Go ``[]byte``): no ``omitempty``. Empty ones are never on the
  wire and decode as nil, which Go's JSON writes as ``null`` without ``omitempty`` and leaves out with it.
  Messages never get a ``!``: they are always kept.
* ``""`` as the JSON name: an embedded struct with ``json:",inline"`` (VolumeSource in Volume, ...).
  Otherwise the JSON name is the ``json`` tag's. It is nearly always generated.proto's field name too, but not
  everywhere (``Webhooks``, ``uID``, ``aPIGroup``, ... in 1.32: the generator prints them as notes); the .proto
  name must equal the ``name=`` of the Go field's ``protobuf`` tag.
* ``StringList``: a message standing for a Go ``[]string`` type (``ExtraValue``), which JSON writes as a list.

Well-known apimachinery messages with a JSON form of their own (``WELL_KNOWN``: Time, MicroTime, Quantity,
IntOrString, FieldsV1, RawExtension; Duration, which no served kind reaches; apiextensions' JSON, a raw JSON value
like RawExtension) are named, not expanded; the decoder implements each, and fails at import on a name it does not
know. apiextensions' ``JSONSchemaPropsOr{Array,Bool,StringArray}`` (``JSON_FORMS``) are ordinary messages on the
wire whose Go types write JSON by hand (``marshal.go``: a schema, a list or a bool, not an object); they are
expanded as messages, their fields named by the .proto (their Go fields have no ``json`` tag), and ``FORMS`` in the
module names the JSON form the decoder gives each.

The table covers the kinds of ``tinykube.api.resources.RESOURCES`` plus ``EXTRA_KINDS`` (the subresource
bodies) and meta/v1 DeleteOptions, with every message they reach; nothing else. Only the interface is taken
from upstream (numbers, names, types); no comments.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "tinykube" / "api" / "protobuf_messages.py"
TAG = "v0.32.13"


@dataclass(frozen=True)
class Package:
    repo: str  # "api", "apimachinery", "kube-aggregator" or "apiextensions-apiserver": which --option's clone
    path: str  # the package's directory in that repository
    proto: str  # its protobuf package
    prefix: str  # how its messages are named in the table: "" (core/v1 and apimachinery: bare) or "apps.v1."


def _api(path: str, bare: bool = False) -> Package:
    return Package("api", path, "k8s.io.api." + path.replace("/", "."), "" if bare else path.replace("/", ".") + ".")


def _machinery(path: str) -> Package:
    return Package("apimachinery", path, "k8s.io.apimachinery." + path.replace("/", "."), "")


# apiVersion -> package. "meta.k8s.io/v1" is DeleteOptions'; runtime, intstr and resource hold the well-known types.
PACKAGES: dict[str, Package] = {
    "v1": _api("core/v1", bare=True),
    "admissionregistration.k8s.io/v1": _api("admissionregistration/v1"),
    "apiregistration.k8s.io/v1": Package(
        "kube-aggregator",
        "pkg/apis/apiregistration/v1",
        "k8s.io.kube_aggregator.pkg.apis.apiregistration.v1",
        "apiregistration.v1.",
    ),
    "apps/v1": _api("apps/v1"),
    "authentication.k8s.io/v1": _api("authentication/v1"),
    "authorization.k8s.io/v1": _api("authorization/v1"),
    "autoscaling/v1": _api("autoscaling/v1"),
    "autoscaling/v2": _api("autoscaling/v2"),
    "batch/v1": _api("batch/v1"),
    "certificates.k8s.io/v1": _api("certificates/v1"),
    "coordination.k8s.io/v1": _api("coordination/v1"),
    "discovery.k8s.io/v1": _api("discovery/v1"),
    "events.k8s.io/v1": _api("events/v1"),
    "flowcontrol.apiserver.k8s.io/v1": _api("flowcontrol/v1"),
    "networking.k8s.io/v1": _api("networking/v1"),
    "node.k8s.io/v1": _api("node/v1"),
    "policy/v1": _api("policy/v1"),
    "rbac.authorization.k8s.io/v1": _api("rbac/v1"),
    "scheduling.k8s.io/v1": _api("scheduling/v1"),
    "storage.k8s.io/v1": _api("storage/v1"),
    "apiextensions.k8s.io/v1": Package(
        "apiextensions-apiserver",
        "pkg/apis/apiextensions/v1",
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1",
        "apiextensions.v1.",
    ),
    "meta.k8s.io/v1": _machinery("pkg/apis/meta/v1"),
    "runtime": _machinery("pkg/runtime"),
    "intstr": _machinery("pkg/util/intstr"),
    "resource": _machinery("pkg/api/resource"),
}

# Served groups without protobuf: resource metrics, which tinykube answers itself in JSON (README "differs").
NO_PROTOBUF = frozenset({"metrics.k8s.io/v1beta1"})

# Bodies of subresources and actions, which are not RESOURCES of their own.
EXTRA_KINDS: tuple[tuple[str, str], ...] = (
    ("autoscaling/v1", "Scale"),  # PUT deployments|replicasets|statefulsets|replicationcontrollers/scale
    ("authentication.k8s.io/v1", "TokenRequest"),  # POST serviceaccounts/token (kubectl create token)
    ("policy/v1", "Eviction"),  # POST pods/eviction (kubectl drain)
    ("v1", "Binding"),  # POST pods/binding, bindings
)

# apimachinery messages whose JSON form is not an object: the decoder handles them by name.
_META = "k8s.io.apimachinery.pkg.apis.meta.v1."
_APIEXTENSIONS = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1."
WELL_KNOWN: dict[str, str] = {
    _META + "Time": "Time",
    _META + "MicroTime": "MicroTime",
    _META + "Duration": "Duration",
    _META + "FieldsV1": "FieldsV1",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "Quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "IntOrString",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "RawExtension",
    _APIEXTENSIONS + "JSON": "JSON",
}
# Messages whose Go type writes its own JSON (apiextensions v1 marshal.go) -> the form the decoder gives them.
JSON_FORMS: dict[str, str] = {
    _APIEXTENSIONS + "JSONSchemaPropsOrArray": "SchemaOrArray",  # the list if any, else the schema (or null)
    _APIEXTENSIONS + "JSONSchemaPropsOrBool": "SchemaOrBool",  # the schema if any, else the bool
    _APIEXTENSIONS + "JSONSchemaPropsOrStringArray": "SchemaOrStringArray",  # the list if any, else the schema
}
SCALARS = {"string": "str", "int32": "int", "int64": "int", "bool": "bool", "bytes": "bytes", "double": "float"}

# --------------------------------------------------------------------------------------------------
# Reading the inputs
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProtoField:
    number: int
    name: str
    type: str  # a scalar, or a message as written (".k8s.io.api.core.v1.X" or a bare "X")
    repeated: bool
    map_value: bool  # map<string, type>


@dataclass(frozen=True)
class GoField:
    go_type: str
    proto_name: str  # the protobuf tag's name=
    json_name: str
    omitempty: bool
    inline: bool


@dataclass
class Sources:
    repos: dict[str, Path]
    tag: str

    def module_dir(self, package: Package) -> bool:
        """A module directory of the proxy (a go.mod, no git), rather than a clone."""
        repo = self.repos[package.repo]
        return (repo / "go.mod").is_file() and not (repo / ".git").exists()

    def show(self, package: Package, name: str) -> str:
        if self.module_dir(package):
            return (self.repos[package.repo] / package.path / name).read_text()
        return _git(self.repos[package.repo], "show", f"{self.tag}:{package.path}/{name}")

    def go_files(self, package: Package) -> list[str]:
        if self.module_dir(package):
            names = sorted(path.name for path in (self.repos[package.repo] / package.path).iterdir())
        else:
            names = _git(self.repos[package.repo], "ls-tree", "--name-only", f"{self.tag}:{package.path}").split()
        return [
            name
            for name in names
            if name.endswith(".go")
            and not name.endswith("_test.go")
            and not name.startswith(("zz_generated", "generated."))
            and "swagger_doc" not in name
        ]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


_PROTO_FIELD = re.compile(
    r"^\s*(?:(?P<label>optional|repeated)\s+(?P<type>[\w.]+)|map<string,\s*(?P<value>[\w.]+)>)"
    r"\s+(?P<name>\w+)\s*=\s*(?P<number>\d+)\s*;"
)


def parse_proto(text: str) -> tuple[str, dict[str, list[ProtoField]]]:
    """The protobuf package and its messages' fields, in declaration order."""
    package = ""
    messages: dict[str, list[ProtoField]] = {}
    current: list[ProtoField] | None = None
    in_comment = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if in_comment or line.startswith("/*"):
            in_comment = "*/" not in line
            continue
        if not line or line.startswith(("syntax ", "import ", "option ")):
            continue
        if line.startswith("package "):
            package = line.removeprefix("package ").rstrip(";").strip()
        elif match := re.fullmatch(r"message (\w+) \{", line):
            if current is not None:
                raise ValueError(f"nested message {match[1]} in {package}")
            current = messages.setdefault(match[1], [])
        elif line == "}":
            current = None
        elif current is not None:
            field = _PROTO_FIELD.match(line)
            if field is None:
                raise ValueError(f"{package}: cannot read {line!r}")
            kind = field["value"] or field["type"]
            repeated, is_map = field["label"] == "repeated", field["value"] is not None
            current.append(ProtoField(int(field["number"]), field["name"], kind, repeated, is_map))
        else:
            raise ValueError(f"{package}: unexpected {line!r}")
    return package, messages


_GO_STRUCT = re.compile(r"^type (\w+) struct \{")
_GO_EMPTY_STRUCT = re.compile(r"^type (\w+) struct\s*\{\s*\}")
_GO_SLICE = re.compile(r"^type (\w+) \[\](\w+)\s*$")
_GO_FIELD = re.compile(r"^\s*(?:(?P<name>\w+)\s+)?(?P<type>[^\s`]+)\s+`(?P<tag>[^`]*)`")
_GO_TAG = re.compile(r'(\w+):"([^"]*)"')


def parse_go(text: str) -> tuple[dict[str, dict[int, GoField]], dict[str, str]]:
    """Struct fields with a protobuf tag, by struct and field number; and `type X []T` declarations."""
    structs: dict[str, dict[int, GoField]] = {}
    slices: dict[str, str] = {}
    current: dict[int, GoField] | None = None
    depth = 0
    for line in text.splitlines():
        if current is None:
            if match := _GO_EMPTY_STRUCT.match(line):
                structs.setdefault(match[1], {})
            elif match := _GO_STRUCT.match(line):
                current, depth = structs.setdefault(match[1], {}), 1
            elif match := _GO_SLICE.match(line):
                slices[match[1]] = match[2]
            continue
        code = line.split("//", 1)[0]
        depth += code.count("{") - code.count("}")
        if depth <= 0:
            current = None
            continue
        field = _GO_FIELD.match(code)
        if field is None:
            continue
        tags = dict(_GO_TAG.findall(field["tag"]))
        if tags.get("protobuf", "-") == "-":
            continue
        if depth != 1:
            raise ValueError(f"a protobuf field in a nested struct: {line.strip()!r}")
        json_name, *options = tags.get("json", "").split(",")
        _wire, number, *proto_options = tags["protobuf"].split(",")
        proto_name = next((o.removeprefix("name=") for o in proto_options if o.startswith("name=")), "")
        inline = "inline" in options
        current[int(number)] = GoField(field["type"], proto_name, json_name, "omitempty" in options, inline)
    return structs, slices


@dataclass
class Loaded:
    package: Package
    messages: dict[str, list[ProtoField]]
    structs: dict[str, dict[int, GoField]]
    slices: dict[str, str]


def load(sources: Sources) -> dict[str, Loaded]:
    """Every package, by protobuf package name."""
    loaded: dict[str, Loaded] = {}
    for package in PACKAGES.values():
        proto_package, messages = parse_proto(sources.show(package, "generated.proto"))
        if proto_package != package.proto:
            raise ValueError(f"{package.path}/generated.proto is package {proto_package}, not {package.proto}")
        structs: dict[str, dict[int, GoField]] = {}
        slices: dict[str, str] = {}
        for name in sources.go_files(package):
            more_structs, more_slices = parse_go(sources.show(package, name))
            structs.update(more_structs)
            slices.update(more_slices)
        loaded[package.proto] = Loaded(package, messages, structs, slices)
    return loaded


# --------------------------------------------------------------------------------------------------
# Building the table
# --------------------------------------------------------------------------------------------------


def _kinds() -> list[tuple[str, str]]:
    sys.path.insert(0, str(ROOT))
    from tinykube.api.resources import RESOURCES

    kinds = [(r.api_version, r.kind) for r in RESOURCES if r.api_version not in NO_PROTOBUF]
    return sorted(set(kinds) | set(EXTRA_KINDS), key=lambda k: (k[0] != "v1", k))


class Builder:
    def __init__(self, loaded: dict[str, Loaded]) -> None:
        self.loaded = loaded
        self.messages: dict[str, dict[int, tuple[str, str]]] = {}
        self.origin: dict[str, str] = {}  # table name -> full protobuf name
        self.pending: list[tuple[str, str]] = []  # (protobuf package, message)
        self.renamed: list[str] = []  # fields whose JSON name is not their .proto name
        self.forms: dict[str, str] = {}  # table name -> JSON_FORMS' form

    def table_name(self, proto_package: str, message: str) -> str:
        name = self.loaded[proto_package].package.prefix + message
        full = f"{proto_package}.{message}"
        if self.origin.setdefault(name, full) != full:
            raise ValueError(f"two messages would be {name!r} in the table: {self.origin[name]} and {full}")
        return name

    def add(self, proto_package: str, message: str) -> str:
        """`message` and everything it reaches; its table name."""
        name = self.table_name(proto_package, message)
        self.pending.append((proto_package, message))
        while self.pending:
            package, pending = self.pending.pop()
            table_name = self.table_name(package, pending)
            if table_name not in self.messages:
                self.messages[table_name] = {}  # reserved first: messages may refer to themselves
                self.messages[table_name] = self.fields(package, pending)
        return name

    def resolve(self, proto_package: str, kind: str) -> tuple[str, str]:
        """A field's type as the table writes it, and whether it is a scalar."""
        if kind in SCALARS:
            return SCALARS[kind], "scalar"
        full = kind.lstrip(".") if kind.startswith(".") else f"{proto_package}.{kind}"
        if full in WELL_KNOWN:
            return WELL_KNOWN[full], "well-known"
        package, _, message = full.rpartition(".")
        if package not in self.loaded or message not in self.loaded[package].messages:
            raise ValueError(f"{proto_package}: unknown type {kind}")
        element = self.loaded[package].slices.get(message)
        if element is not None:
            if element != "string" or [f.name for f in self.loaded[package].messages[message]] != ["items"]:
                raise ValueError(f"{full} is a Go []{element}: no JSON form for it in the decoder")
            return "StringList", "well-known"
        self.table_name(package, message)
        self.pending.append((package, message))
        return self.table_name(package, message), "message"

    def fields(self, proto_package: str, message: str) -> dict[int, tuple[str, str]]:
        loaded = self.loaded[proto_package]
        struct = loaded.structs.get(message)
        if struct is None:
            raise ValueError(f"{proto_package}.{message}: no Go struct of that name in {loaded.package.path}")
        form = JSON_FORMS.get(f"{proto_package}.{message}")
        if form is not None:
            self.forms[self.table_name(proto_package, message)] = form
        out: dict[int, tuple[str, str]] = {}
        for field in loaded.messages[message]:
            go = struct.get(field.number)
            where = f"{proto_package}.{message}.{field.name} = {field.number}"
            if go is None:
                raise ValueError(f"{where}: no Go field with that protobuf number")
            if form is not None and not go.json_name:  # JSON written by hand: the fields keep their .proto names
                go = GoField(go.go_type, go.proto_name, field.name, go.omitempty, go.inline)
            if go.proto_name not in (field.name, "" if go.inline else field.name) or not (go.inline or go.json_name):
                raise ValueError(f"{where}: the Go field is {go.proto_name!r} in protobuf, {go.json_name!r} in JSON")
            if not go.inline and go.json_name != field.name:
                self.renamed.append(f"{where}: {go.json_name}")
            kind, what = self.resolve(proto_package, field.type)
            if go.inline and (what != "message" or field.repeated or field.map_value):
                raise ValueError(f"{where}: inlines a {kind}, not a message")
            if field.repeated or field.map_value:
                keep_zero = not go.omitempty  # JSON writes a nil one as null
            else:
                keep_zero = what == "scalar" and (go.go_type.startswith("*") or not go.omitempty)
            if go.go_type.startswith("*") and kind == "bytes":
                raise ValueError(f"{where}: a pointer to []byte, which the decoder's bytes! does not expect")
            spec = ("[]" if field.repeated else "{}" if field.map_value else "") + kind + ("!" if keep_zero else "")
            out[field.number] = ("" if go.inline else go.json_name, spec)
        extra = set(struct) - set(out)
        if extra:
            raise ValueError(f"{proto_package}.{message}: Go fields {sorted(extra)} are not in generated.proto")
        return out


Table = dict[str, dict[int, tuple[str, str]]]


def build(loaded: dict[str, Loaded]) -> tuple[Table, dict[tuple[str, str], str], dict[str, str]]:
    """The messages, the message of each kind, and the JSON form of the messages that have one of their own."""
    builder = Builder(loaded)
    kinds: dict[tuple[str, str], str] = {}
    for api_version, kind in _kinds():
        package = PACKAGES[api_version].proto
        if kind not in loaded[package].messages:
            raise ValueError(f"no message {kind} in {PACKAGES[api_version].path}/generated.proto")
        kinds[(api_version, kind)] = builder.add(package, kind)
    builder.add(PACKAGES["meta.k8s.io/v1"].proto, "DeleteOptions")
    for renamed in builder.renamed:
        print(f"note: {renamed} in JSON", file=sys.stderr)
    return builder.messages, kinds, dict(sorted(builder.forms.items()))


# --------------------------------------------------------------------------------------------------
# Writing the module
# --------------------------------------------------------------------------------------------------

HEADER = '''"""The protobuf schema of every kind tinykube decodes (tinykube/api/protobuf.py describes the format).

GENERATED by tools/protobuf_messages.py from upstream's generated.proto files and Go struct tags
(k8s.io/api, k8s.io/apimachinery, k8s.io/kube-aggregator, k8s.io/apiextensions-apiserver {tag}); do not edit
by hand, run the generator.
"""

from __future__ import annotations
'''


def _order(name: str) -> tuple[int, str]:
    """Messages grouped by package, in PACKAGES' order; alphabetical within one."""
    prefixes = [package.prefix for package in PACKAGES.values()]
    prefix = name.rpartition(".")[0] + "." if "." in name else ""
    return prefixes.index(prefix), name


def render(messages: Table, kinds: dict[tuple[str, str], str], forms: dict[str, str], tag: str) -> str:
    def lines() -> Iterator[str]:
        yield HEADER.format(tag=tag)
        yield "# message -> {field number: (JSON name, type)}, the fields in generated.proto's order"
        yield "MESSAGES: dict[str, dict[int, tuple[str, str]]] = {"
        for name in sorted(messages, key=_order):
            fields = messages[name]
            if not fields:
                yield f'    "{name}": {{}},'
                continue
            yield f'    "{name}": {{'
            for number, (json_name, spec) in fields.items():
                yield f'        {number}: ("{json_name}", "{spec}"),'
            yield "    },"
        yield "}"
        yield ""
        yield "# (apiVersion, kind) of a top-level object -> its message"
        yield "KINDS: dict[tuple[str, str], str] = {"
        for (api_version, kind), name in kinds.items():
            yield f'    ("{api_version}", "{kind}"): "{name}",'
        yield "}"
        yield ""
        yield "# messages whose Go type writes JSON by hand -> the form the decoder gives them"
        yield "FORMS: dict[str, str] = {"
        for name, form in forms.items():
            yield f'    "{name}": "{form}",'
        yield "}"

    return _ruff_format("\n".join(lines()) + "\n")


def _ruff_format(text: str) -> str:
    """The module as `ruff format` (the project's formatter, with the project's settings) writes it."""
    command = ["ruff", "format", "--stdin-filename", str(OUTPUT.relative_to(ROOT)), "-"]
    return subprocess.run(command, input=text, cwd=ROOT, check=True, capture_output=True, text=True).stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--api", type=Path, required=True, help="a git clone of github.com/kubernetes/api")
    parser.add_argument("--apimachinery", type=Path, required=True, help="a clone of kubernetes/apimachinery")
    parser.add_argument("--kube-aggregator", type=Path, required=True, help="a clone of kubernetes/kube-aggregator")
    parser.add_argument(
        "--apiextensions-apiserver", type=Path, required=True, help="a clone of kubernetes/apiextensions-apiserver"
    )
    parser.add_argument("--tag", default=TAG, help=f"the tag read in all four clones (default {TAG})")
    parser.add_argument("--check", action="store_true", help=f"compare with {OUTPUT.relative_to(ROOT)}, write nothing")
    args = parser.parse_args(argv)
    repos = {
        "api": args.api,
        "apimachinery": args.apimachinery,
        "kube-aggregator": args.kube_aggregator,
        "apiextensions-apiserver": args.apiextensions_apiserver,
    }
    messages, kinds, forms = build(load(Sources(repos, args.tag)))
    text = render(messages, kinds, forms, args.tag)
    if args.check:
        if OUTPUT.read_text() != text:
            print(f"{OUTPUT.relative_to(ROOT)} is not what {args.tag} gives: run the generator", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
