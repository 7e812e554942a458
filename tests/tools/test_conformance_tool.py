"""tools/conformance.py's pure logic: staging-module versions, the selections' rules, and the report from
ginkgo's JSON (no Go, no cluster)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest


def _tool() -> Any:
    """tools/conformance.py, a script rather than a package module."""
    path = Path(__file__).resolve().parents[2] / "tools" / "conformance.py"
    spec = importlib.util.spec_from_file_location("conformance_tool", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


tool = _tool()

GOMOD = """module k8s.io/kubernetes
go 1.23.0
require (
\tk8s.io/api v0.0.0
\tgithub.com/onsi/ginkgo/v2 v2.21.0
)
replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/sample-apiserver => ./staging/src/k8s.io/sample-apiserver
\tgithub.com/x/y => github.com/x/y v1.0.0
)
"""


def test_staging_modules_are_the_replaces_into_the_staging_tree() -> None:
    assert tool.staging_modules(GOMOD) == ["k8s.io/api", "k8s.io/sample-apiserver"]


def test_candidate_patches_are_newest_first_and_not_past_the_target() -> None:
    listed = ["v0.31.9", "v0.32.0", "v0.32.3", "v0.32.14", "v0.32.10-rc.0", "v0.32.12", "v0.33.0"]
    assert tool.candidate_patches(listed, 32, 13) == ["v0.32.12", "v0.32.3", "v0.32.0"]


def test_staging_version_of_a_release() -> None:
    assert tool.staging_version("v1.32.13") == (32, 13)
    with pytest.raises(SystemExit):
        tool.staging_version("1.32")


def test_generated_gomod_requires_kubernetes_and_replaces_each_staging_module() -> None:
    text = tool.e2ebuild_gomod("v1.32.13", {"k8s.io/api": "v0.32.13", "k8s.io/kubectl": "v0.32.3"}, "1.23.0")
    assert "module local/e2ebuild" in text
    assert "require k8s.io/kubernetes v1.32.13" in text
    assert "\tk8s.io/kubectl => k8s.io/kubectl v0.32.3" in text


WEBHOOK = "[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should mutate configmap [Conformance]"
DNS = "[sig-network] DNS should provide DNS for services [Conformance]"
CM_VOLUME = "[sig-storage] ConfigMap should be consumable from pods in volume [NodeConformance] [Conformance]"
CM_IMMUTABLE = "[sig-storage] ConfigMap should be immutable if `immutable` field is set [Conformance]"
WATCH = "[sig-api-machinery] Watchers should be able to start watching from a specific resource version [Conformance]"
NOT_CONFORMANCE = "[sig-api-machinery] Watchers should be cheap"


def test_api_selection_leaves_out_what_needs_a_running_container() -> None:
    api = tool.selection("api")
    assert not api.selects(WEBHOOK)
    assert not api.selects(DNS)
    assert not api.selects(CM_VOLUME)
    assert api.selects(CM_IMMUTABLE)
    assert api.selects(WATCH)
    assert not api.selects(NOT_CONFORMANCE)


def test_all_selection_is_the_whole_focus_and_smoke_a_part_of_api() -> None:
    assert all(tool.selection("all").selects(t) for t in (WEBHOOK, DNS, CM_VOLUME, WATCH))
    smoke = tool.selection("smoke")
    assert smoke.selects(WATCH)
    assert not smoke.selects(WEBHOOK)
    assert not smoke.selects("[sig-apps] Deployment should run the lifecycle of a Deployment [Conformance]")


def test_each_api_rule_is_plain_enough_for_re2() -> None:
    for rule, reason in tool.API_SKIP:
        assert "(?=" not in rule and "(?!" not in rule and "(?<" not in rule, rule
        assert reason


def _spec(container: list[str], leaf: str, state: str, message: str = "", kind: str = "It") -> dict[str, Any]:
    return {
        "ContainerHierarchyTexts": container,
        "LeafNodeText": leaf,
        "LeafNodeType": kind,
        "State": state,
        "Failure": {"Message": message} if message else None,
        "RunTime": 2_000_000_000,
    }


GINKGO_JSON = [
    {
        "SpecReports": [
            _spec([], "", "passed", kind="SynchronizedBeforeSuite"),
            _spec(
                ["[sig-api-machinery] Watchers"],
                "should be able to start watching from a specific resource version [Conformance]",
                "passed",
            ),
            _spec(
                ["[sig-node] Pods"],
                "should patch a pod status [Conformance]",
                "failed",
                "failed to patch\nExpected <int>: 1\nto equal 2",
            ),
            _spec(["[sig-network] DNS"], "should provide DNS for services [Conformance]", "skipped"),
            _spec(
                ["[sig-node] Pods"],
                "should be updated [NodeConformance] [Conformance]",
                "timedout",
                "A suite timeout occurred and this spec was still running at the time of the timeout, which was "
                "long enough to be reported on one line only",
            ),
            _spec(
                ["[sig-node] Lease"],
                "lease API should be available [Conformance]",
                "skipped",
                "Skipped: not on this provider",
            ),
            _spec(
                ["[sig-node] Pods"], "should delete a collection of pods [Conformance]", "interrupted", "Interrupted"
            ),
        ]
    }
]


def test_report_counts_only_selected_specs_per_sig_with_first_lines() -> None:
    specs, suite_failures = tool.parse_ginkgo_json(GINKGO_JSON, tool.selection("api"))
    report = tool.Report("api", "v1.32.13", specs, 60.0, suite_failures)
    assert report.counts() == {"passed": 1, "failed": 2, "skipped": 1, "not run": 1}
    assert report.by_sig() == {
        "sig-api-machinery": {"passed": 1, "failed": 0, "skipped": 0, "not run": 0},
        "sig-node": {"passed": 0, "failed": 2, "skipped": 1, "not run": 1},
    }
    assert [s.text for s in report.not_run()] == ["[sig-node] Pods should delete a collection of pods [Conformance]"]
    fails = report.failures()
    assert [f.first_line for f in fails] == [
        "A suite timeout occurred and this spec was still running at the time of the timeout, which was long "
        "enough to be reported on one line only",
        "failed to patch / Expected <int>: 1",
    ]
    text = tool.markdown(report)
    assert "**1 of 5 pass**" in text
    assert "| sig-node | 0 | 2 | 1 | 1 | 4 |" in text
    assert "[sig-node] Pods should patch a pod status [Conformance]" in text


def test_suite_level_failures_are_reported_apart() -> None:
    data = [{"SpecReports": [_spec([], "", "failed", "BeforeSuite: no nodes", kind="SynchronizedBeforeSuite")]}]
    specs, suite_failures = tool.parse_ginkgo_json(data, tool.selection("api"))
    assert specs == []
    assert suite_failures == ["SynchronizedBeforeSuite: BeforeSuite: no nodes"]


VAP = "[sig-api-machinery] ValidatingAdmissionPolicy [Privileged:ClusterAdmin] should validate against a Deployment [Conformance]"  # noqa: E501


def test_a_hanging_spec_is_reported_as_failed_with_its_reason(tmp_path: Path) -> None:
    data = [{"SpecReports": [_spec([VAP.rsplit(" should", 1)[0]], "should" + VAP.rsplit(" should", 1)[1], "skipped")]}]
    (tmp_path / "report.json").write_text(json.dumps(data))
    report = tool.load_report(tmp_path / "report.json", tool.selection("api"), "v1.32.13", 60.0)
    (spec,) = report.specs
    assert spec.text == VAP and tool.outcome(spec) == "failed"
    assert spec.message.startswith(tool.LEFT_OUT) and "not enforced" in spec.message
    assert "0 ran in 1 min (1 left out: they hang)." in tool.markdown(report)


def test_focus_narrows_a_selection_and_is_sent_as_literal_texts() -> None:
    part = tool.Selection("api", tool.FOCUS, tool.selection("api").skip, r"\[Serial\]")
    assert part.selects("[sig-apps] Daemon set [Serial] should run and stop simple daemon [Conformance]")
    assert not part.selects(WATCH)
    text = "[sig-apps] Job should run (a|b) job. {x} ^$ +*?"
    literal = tool.go_literal(text)
    assert re.fullmatch(literal, text) and "\\ " not in literal  # RE2 refuses an escaped space
