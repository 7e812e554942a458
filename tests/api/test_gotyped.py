"""An object as a Go client marshals it back after decoding it into its typed struct."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tinykube.api.gotyped import drop_omitted_zeros, round_trip


def test_a_template_loses_omitempty_zeros_and_unknown_fields_and_keeps_pointers_and_structs() -> None:
    template = {
        "metadata": {"labels": {"app": "a"}, "creationTimestamp": None, "name": ""},
        "spec": {
            "hostNetwork": False,  # bool, omitempty
            "tolerations": [],  # omitempty list
            "enableServiceLinks": False,  # *bool: kept
            "securityContext": {},
            "notAField": 1,
            "containers": [
                {
                    "name": "c",
                    "env": [{"name": "X", "value": ""}],
                    "resources": {"limits": {"cpu": "1000m", "memory": "1Gi"}},
                    "readinessProbe": {"httpGet": {"port": 0, "path": "/"}, "timeoutSeconds": 0},
                }
            ],
        },
    }
    assert round_trip(template, "PodTemplateSpec") == {
        "metadata": {"labels": {"app": "a"}, "creationTimestamp": None},
        "spec": {
            "enableServiceLinks": False,
            "securityContext": {},
            "containers": [
                {
                    "name": "c",
                    "env": [{"name": "X"}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                    "readinessProbe": {"httpGet": {"port": 0, "path": "/"}},  # IntOrString: a struct, kept
                }
            ],
        },
    }


# ---- zeros dropped on a write, given the object it replaces ----------------------------------------------------

ZERO_OR_NOT = {
    "text": st.sampled_from(["", "x"]),
    "number": st.sampled_from([0, 1]),
    "flag": st.booleans(),
}
CONTAINER = st.fixed_dictionaries(
    {"name": st.just("c")},
    optional={
        "image": ZERO_OR_NOT["text"],
        "ports": st.lists(st.fixed_dictionaries({}, optional={"containerPort": ZERO_OR_NOT["number"]}), max_size=2),
        "stdin": ZERO_OR_NOT["flag"],
    },
)
POD = st.fixed_dictionaries(
    {"apiVersion": st.just("v1"), "kind": st.just("Pod")},
    optional={
        "metadata": st.fixed_dictionaries(
            {"name": st.just("p")},
            optional={"labels": st.dictionaries(st.sampled_from("ab"), ZERO_OR_NOT["text"], max_size=2)},
        ),
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "hostNetwork": ZERO_OR_NOT["flag"],
                "nodeName": ZERO_OR_NOT["text"],
                "priority": ZERO_OR_NOT["number"],
                "containers": st.lists(CONTAINER, max_size=2),
                "nodeSelector": st.dictionaries(st.sampled_from("ab"), ZERO_OR_NOT["text"], max_size=2),
            },
        ),
        "status": st.fixed_dictionaries(
            {},
            optional={
                "phase": ZERO_OR_NOT["text"],
                "hostIP": ZERO_OR_NOT["text"],
                "conditions": st.lists(
                    st.fixed_dictionaries({"type": st.just("Ready")}, optional={"status": ZERO_OR_NOT["text"]}),
                    max_size=2,
                ),
            },
        ),
    },
)


@settings(max_examples=300)
@given(stored=POD, sent=POD, keep=st.sets(st.sampled_from(["metadata", "spec", "status"])))
def test_zeros_dropped_given_the_stored_object_are_those_dropped_without_it(
    stored: dict[str, Any], sent: dict[str, Any], keep: set[str]
) -> None:
    """The shortcut (parts equal to the stored object's are not walked) drops exactly what the full walk drops."""
    drop_omitted_zeros(stored)  # as it was written
    new = {**sent, **{name: copy.deepcopy(stored[name]) for name in keep if name in stored}}  # parts left as stored
    full, shortcut = copy.deepcopy(new), copy.deepcopy(new)
    drop_omitted_zeros(full)
    drop_omitted_zeros(shortcut, stored)
    assert shortcut == full
