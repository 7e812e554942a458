"""The shared validation helpers every API group's strategies use (tinykube/apiserver/registry/validation.py): the
"list of named items" rule, with upstream's messages as kubectl prints them."""

from __future__ import annotations

from typing import Any

import pytest

from tinykube.api.meta import dns1123_label
from tinykube.apiserver.kinds.core.pod_validation import validate_ephemeral_update, validate_pod_spec
from tinykube.apiserver.registry.validation import NamedItems

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def checked(names: list[str], items: NamedItems) -> list[str]:
    return [str(err) for i, name in enumerate(names) for err in items.check(name, f"spec.items[{i}].name")]


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        pytest.param(["a", "b"], [], id="unique"),
        pytest.param(["a", "a"], ['spec.items[1].name: Duplicate value: "a"'], id="duplicate"),
        pytest.param(["a", ""], ["spec.items[1].name: Required value"], id="required"),
        pytest.param(
            ["", ""],
            ["spec.items[0].name: Required value", "spec.items[1].name: Required value"],
            id="empty-names-are-not-duplicates",
        ),
        pytest.param(
            ["A_", "A_"],
            [
                f'spec.items[0].name: Invalid value: "A_": {LABEL_MSG}',
                f'spec.items[1].name: Invalid value: "A_": {LABEL_MSG}',
                'spec.items[1].name: Duplicate value: "A_"',
            ],
            id="an-invalid-repeat-is-still-a-duplicate",
        ),
    ],
)
def test_named_items(names: list[str], expected: list[str]) -> None:
    assert checked(names, NamedItems(dns1123_label)) == expected


def test_named_items_may_allow_an_empty_name_and_give_a_required_detail() -> None:
    assert checked(["", ""], NamedItems(allow_empty=True)) == []
    assert checked([""], NamedItems(required_detail="must not be empty")) == [
        "spec.items[0].name: Required value: must not be empty"
    ]


@pytest.mark.parametrize(
    ("keys", "shown", "expected"),
    [
        pytest.param(
            ["x", "x", "x"], None, ['f[1]: Duplicate value: "x"', 'f[2]: Duplicate value: "x"'], id="each-repeat"
        ),
        pytest.param(["", ""], None, ['f[1]: Duplicate value: ""'], id="empty-keys-repeat"),
        pytest.param([{"a": 1}, {"a": 1}], "", ['f[1]: Duplicate value: ""'], id="unhashable-keys-shown-as-given"),
    ],
)
def test_named_items_repeat(keys: list[Any], shown: Any, expected: list[str]) -> None:
    items = NamedItems()
    found = [
        str(err)
        for i, key in enumerate(keys)
        for err in (items.repeat(key, f"f[{i}]") if shown is None else items.repeat(key, f"f[{i}]", shown=shown))
    ]
    assert found == expected
    assert keys[0] in items


def test_ephemeral_containers_are_named_apart_from_the_pods_containers() -> None:
    """A pod's containers, init containers and ephemeral containers share one namespace of names."""
    old = {"containers": [{"name": "app", "image": "i"}]}
    new = {
        **old,
        "ephemeralContainers": [
            {"name": "app", "image": "busybox"},
            {"name": "dbg", "image": "busybox"},
            {"name": "dbg", "image": "busybox"},
        ],
    }
    assert [str(err) for err in validate_ephemeral_update(new, old)] == [
        'spec.ephemeralContainers[0].name: Duplicate value: "app"',
        'spec.ephemeralContainers[2].name: Duplicate value: "dbg"',
    ]


def test_init_and_app_containers_share_their_names() -> None:
    spec = {
        "initContainers": [{"name": "setup", "image": "i"}],
        "containers": [{"name": "setup", "image": "i"}, {"name": "", "image": "i"}],
        "restartPolicy": "Always",
        "dnsPolicy": "ClusterFirst",
    }
    assert [str(err) for err in validate_pod_spec(spec, "spec")] == [
        'spec.containers[0].name: Duplicate value: "setup"',
        "spec.containers[1].name: Required value",
    ]
