"""An object as a Go client marshals it back after decoding it into its typed struct."""

from __future__ import annotations

from tinykube.api.gotyped import round_trip


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
