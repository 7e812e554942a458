"""The workload kinds beyond Deployments and ReplicaSets, without HTTP: each strategy's upstream defaults, field
paths and messages (`tinykube/apiserver/kinds/{apps,core,policy,batch,autoscaling}/`), and the cells of their
`kubectl get` columns (`tinykube/apiserver/kinds/<group>/printers.py`). Objects are run through a strategy the way the
registry does it (prepare, system metadata, allocate, validate)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tinykube.api.cron import ScheduleError, check_schedule
from tinykube.api.errors import invalid_object
from tinykube.api.resources import RESOURCES
from tinykube.apiserver.kinds.apps import strategy as apps
from tinykube.apiserver.kinds.autoscaling import strategy as autoscaling
from tinykube.apiserver.kinds.autoscaling.printers import format_hpa_metrics
from tinykube.apiserver.kinds.autoscaling.strategy import quantity_sign
from tinykube.apiserver.kinds.batch import strategy as batch
from tinykube.apiserver.kinds.core import replicationcontrollers
from tinykube.apiserver.kinds.policy import strategy as policy
from tinykube.apiserver.kinds.printers import PRINTERS
from tinykube.apiserver.registry.generic import Strategy

STRATEGIES = {
    **apps.STRATEGIES,
    **replicationcontrollers.STRATEGIES,
    **policy.STRATEGIES,
    **batch.STRATEGIES,
    **autoscaling.STRATEGIES,
}
UID = "6d1b8a52-0f37-4a6c-9d0f-7a0e2b3c4d5e"
NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
CREATED = "2024-05-01T11:00:00Z"


def strategy(plural: str) -> Strategy:
    resource = next(r for r in RESOURCES if r.plural == plural and not r.view_of)
    return STRATEGIES[plural](resource)


def create(plural: str, obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """What the registry does on create: system fields, prepare (defaults), validate."""
    obj = copy.deepcopy(obj)
    s = strategy(plural)
    obj.setdefault("metadata", {}).setdefault("namespace", "default")
    obj["metadata"]["uid"] = UID
    obj["metadata"]["creationTimestamp"] = CREATED
    s.prepare_create(obj)
    return obj, [str(e) for e in s.validate(obj, None)]


def update(plural: str, new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    s = strategy(plural)
    new = copy.deepcopy(new)
    s.prepare_update(new, old)
    return [str(e) for e in s.validate(new, old)]


def template(restart: str | None = None, **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": labels or {"app": "web"}}, "spec": spec}


def workload(kind: str, **spec: Any) -> dict[str, Any]:
    body = {"selector": {"matchLabels": {"app": "web"}}, "template": template(), **spec}
    return {"kind": kind, "metadata": {"name": "web"}, "spec": body}


# ---- StatefulSet ------------------------------------------------------------------------------------------------


def test_statefulset_defaults() -> None:
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    obj, errs = create("statefulsets", workload("StatefulSet", serviceName="web", volumeClaimTemplates=[claim]))
    assert errs == []
    spec = obj["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (1, 10)
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert spec["volumeClaimTemplates"][0] == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "creationTimestamp": None},
        "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"},
        "status": {"phase": "Pending"},
    }
    assert obj["status"] == {"replicas": 0, "availableReplicas": 0}


def test_statefulset_ondelete_strategy_gets_no_partition() -> None:
    obj, errs = create("statefulsets", workload("StatefulSet", updateStrategy={"type": "OnDelete"}))
    assert errs == []
    assert obj["spec"]["updateStrategy"] == {"type": "OnDelete"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"podManagementPolicy": "Random"},
            "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
            id="pod-management-policy",
        ),
        pytest.param(
            {"updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1}}},
            'spec.updateStrategy.rollingUpdate: Invalid value: {"partition":1}: only allowed for updateStrategy '
            "'RollingUpdate'",
            id="rolling-update-with-ondelete",
        ),
        pytest.param(
            {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": -1}}},
            "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0",
            id="negative-partition",
        ),
        pytest.param(
            {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Keep", "whenScaled": "Retain"}},
            'spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Keep": supported values: '
            '"Delete", "Retain"',
            id="retention-policy",
        ),
        pytest.param(
            {"selector": {}},
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
            "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for statefulset",
            id="empty-selector",
        ),
        pytest.param(
            {"template": template(restart="Never")},
            'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
            id="restart-never",
        ),
        pytest.param(
            {"selector": {"matchLabels": {"app": "db"}}},
            'spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: '
            "`selector` does not match template `labels`",
            id="selector-mismatch",
        ),
    ],
)
def test_statefulset_validation(spec: dict[str, Any], expected: str) -> None:
    _obj, errs = create("statefulsets", workload("StatefulSet", **spec))
    assert expected in errs


def test_statefulset_update_only_allows_upstreams_fields() -> None:
    old, _ = create("statefulsets", workload("StatefulSet", serviceName="web"))
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 5
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    new["spec"]["minReadySeconds"] = 3
    new["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] = "Delete"
    assert update("statefulsets", new, old) == []
    for field, value in (("serviceName", "other"), ("revisionHistoryLimit", 3), ("podManagementPolicy", "Parallel")):
        changed = copy.deepcopy(old)
        changed["spec"][field] = value
        assert update("statefulsets", changed, old) == [
            "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
            "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
        ], field


def test_statefulset_status_counts() -> None:
    obj, _ = create("statefulsets", workload("StatefulSet"))
    obj["status"] = {"replicas": 1, "readyReplicas": 2, "availableReplicas": 2}
    errs = [str(e) for e in strategy("statefulsets").validate(obj, None)]
    assert "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas" in errs
    assert "status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas" in errs


# ---- DaemonSet --------------------------------------------------------------------------------------------------


def test_daemonset_defaults() -> None:
    obj, errs = create("daemonsets", workload("DaemonSet"))
    assert errs == []
    assert obj["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert obj["spec"]["revisionHistoryLimit"] == 10
    assert obj["status"] == {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }


@pytest.mark.parametrize(
    ("strategy_spec", "expected"),
    [
        pytest.param(
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}},
            'spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:""}'
            ": may not be set when maxUnavailable is non-zero",
            id="both-nonzero",
        ),
        pytest.param(
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}},
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
            id="both-zero",
        ),
        pytest.param(
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%", "maxSurge": 0}},
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "
            'intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%',
            id="over-100-percent",
        ),
        pytest.param(
            {"type": "Sometimes"},
            'spec.updateStrategy: Unsupported value: apps.DaemonSetUpdateStrategy{Type:"Sometimes", '
            'RollingUpdate:...}: supported values: "RollingUpdate", "OnDelete"',
            id="unknown-type",
        ),
    ],
)
def test_daemonset_update_strategy(strategy_spec: dict[str, Any], expected: str) -> None:
    _obj, errs = create("daemonsets", workload("DaemonSet", updateStrategy=strategy_spec))
    assert expected in errs


def test_daemonset_selector_is_immutable_and_pods_restart_always() -> None:
    old, _ = create("daemonsets", workload("DaemonSet"))
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    assert update("daemonsets", new, old) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "tier":"x"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    ]
    _obj, errs = create("daemonsets", workload("DaemonSet", template=template(restart="OnFailure")))
    assert errs == ['spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"']


# ---- ControllerRevision -----------------------------------------------------------------------------------------


def test_controller_revision() -> None:
    obj, errs = create("controllerrevisions", {"metadata": {"name": "web-1"}})
    assert obj["revision"] == 0
    assert errs == ["data: Required value: data is mandatory"]
    obj, errs = create("controllerrevisions", {"metadata": {"name": "web-1"}, "data": {"a": 1}, "revision": -1})
    assert errs == ["revision: Invalid value: -1: must be greater than or equal to 0"]
    changed = {**obj, "data": {"a": 2}, "revision": 1}
    assert update("controllerrevisions", changed, obj) == ['data: Invalid value: {"a":2}: field is immutable']


# ---- ReplicationController --------------------------------------------------------------------------------------


def test_replication_controller_defaults_selector_and_labels_from_template() -> None:
    body = {"metadata": {"name": "web"}, "spec": {"template": template(app="web", tier="front")}}
    obj, errs = create("replicationcontrollers", body)
    assert errs == []
    assert obj["spec"]["selector"] == {"app": "web", "tier": "front"}
    assert obj["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert obj["spec"]["replicas"] == 1
    assert obj["status"] == {"replicas": 0}


def test_replication_controller_validation() -> None:
    body = {"metadata": {"name": "web"}, "spec": {"selector": {"app": "db"}, "template": template(restart="Never")}}
    _obj, errs = create("replicationcontrollers", body)
    assert errs == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: '
        "selector does not match labels in spec.template",
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]
    _obj, errs = create("replicationcontrollers", {"metadata": {"name": "web"}, "spec": {}})
    assert errs == ["spec.selector: Required value", "spec.template: Required value"]


# ---- Job --------------------------------------------------------------------------------------------------------


def job(**spec: Any) -> dict[str, Any]:
    return {"kind": "Job", "metadata": {"name": "pi"}, "spec": {"template": template(restart="Never"), **spec}}


def test_job_defaults_and_generated_selector() -> None:
    obj, errs = create("jobs", job())
    assert errs == []
    spec = obj["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["suspend"], spec["podReplacementPolicy"]) == (
        "NonIndexed",
        False,
        "TerminatingOrFailed",
    )
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    generated = {
        "batch.kubernetes.io/controller-uid": UID,
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": UID,
        "job-name": "pi",
    }
    assert spec["template"]["metadata"]["labels"] == {"app": "web", **generated}
    assert obj["metadata"]["labels"] == {"app": "web", **generated}  # copied from the template, after generation


def test_job_parallelism_alone_leaves_completions_unset() -> None:
    obj, _ = create("jobs", job(parallelism=3))
    assert "completions" not in obj["spec"]
    assert obj["spec"]["parallelism"] == 3
    obj, _ = create("jobs", job(podFailurePolicy={"rules": [{"action": "Ignore", "onPodConditions": [{"type": "X"}]}]}))
    assert obj["spec"]["podReplacementPolicy"] == "Failed"
    assert obj["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"] == [{"type": "X", "status": "True"}]


def test_job_restart_policy() -> None:
    _obj, errs = create("jobs", job(template=template()))
    assert errs == ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']


def test_job_manual_selector() -> None:
    _obj, errs = create("jobs", job(manualSelector=True))
    assert "spec.selector: Required value" in errs
    obj, errs = create("jobs", job(manualSelector=True, selector={"matchLabels": {"app": "web"}}))
    assert errs == []
    assert "job-name" not in obj["spec"]["template"]["metadata"]["labels"]


def test_job_with_a_foreign_selector_is_refused() -> None:
    """A selector the user wrote gets the uid requirement added, and is still refused: it is not the generated one."""
    _obj, errs = create("jobs", job(selector={"matchLabels": {"app": "web"}}))
    assert errs == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", '
        f'"batch.kubernetes.io/controller-uid":"{UID}"}}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}}: '
        "`selector` not auto-generated"
    ]


def test_job_template_is_immutable_unless_suspended_and_never_started() -> None:
    old, _ = create("jobs", job())
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    assert update("jobs", new, old) == ["spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable"]
    suspended, _ = create("jobs", job(suspend=True))
    new = copy.deepcopy(suspended)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    new["spec"]["template"]["metadata"]["annotations"] = {"note": "x"}
    assert update("jobs", new, suspended) == []
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox"
    assert update("jobs", new, suspended) == [
        "spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable"
    ]
    started = {**suspended, "status": {"startTime": CREATED}}
    new = copy.deepcopy(started)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    assert update("jobs", new, started) == [
        "spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable"
    ]


def test_job_completions_immutable_except_indexed_in_tandem() -> None:
    old, _ = create("jobs", job(completions=3))
    new = copy.deepcopy(old)
    new["spec"]["completions"] = 4
    assert update("jobs", new, old) == ["spec.completions: Invalid value: 4: field is immutable"]
    old, errs = create("jobs", job(completions=3, parallelism=3, completionMode="Indexed"))
    assert errs == []
    new = copy.deepcopy(old)
    new["spec"]["completions"] = 4
    assert update("jobs", new, old) == [
        "spec.completions: Invalid value: 4: can only be modified in tandem with spec.parallelism"
    ]
    new["spec"]["parallelism"] = 4
    assert update("jobs", new, old) == []


def test_indexed_job_needs_completions_and_a_pod_hostname() -> None:
    _obj, errs = create("jobs", job(completionMode="Indexed", parallelism=2))
    assert "spec.completions: Required value: when completion mode is Indexed" in errs
    long_name = job(completionMode="Indexed", completions=10)
    long_name["metadata"]["name"] = "x" * 62
    _obj, errs = create("jobs", long_name)
    assert f'metadata.name: Invalid value: "{"x" * 62}": will not able to create pod with invalid DNS label: ' in (
        errs[0] if errs else ""
    )


# ---- CronJob ----------------------------------------------------------------------------------------------------


def cronjob(schedule: str = "*/5 * * * *", **spec: Any) -> dict[str, Any]:
    job_template = {"spec": {"template": template(restart="OnFailure")}}
    return {
        "kind": "CronJob",
        "metadata": {"name": "tick"},
        "spec": {"schedule": schedule, "jobTemplate": job_template, **spec},
    }


def test_cronjob_defaults() -> None:
    obj, errs = create("cronjobs", cronjob())
    assert errs == []
    spec = obj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"]) == ("Allow", False)
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    assert spec["jobTemplate"]["metadata"] == {"creationTimestamp": None}
    assert "backoffLimit" not in spec["jobTemplate"]["spec"]  # the Job's defaults are applied to the Jobs it makes
    assert spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        pytest.param("61 * * * *", "end of range (61) above maximum (59): 61", id="minute-range"),
        pytest.param("0 0 * * 7", "end of range (7) above maximum (6): 7", id="sunday-seven"),
        pytest.param("0 0 0 * *", "beginning of range (0) below minimum (1): 0", id="day-zero"),
        pytest.param("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1", id="reversed"),
        pytest.param("*/0 * * * *", "step of range should be a positive number: */0", id="step-zero"),
        pytest.param("* * * *", "expected exactly 5 fields, found 4: [* * * *]", id="four-fields"),
        pytest.param("0 * * * * *", "expected exactly 5 fields, found 6: [0 * * * * *]", id="seconds"),
        pytest.param(
            "0 0 L * *", 'failed to parse int from L: strconv.Atoi: parsing "L": invalid syntax', id="quartz-last"
        ),
        pytest.param("1-2-3 * * * *", "too many hyphens: 1-2-3", id="hyphens"),
        pytest.param("@reboot", "unrecognized descriptor: @reboot", id="reboot"),
        pytest.param(
            "@every 5x",
            'failed to parse duration @every 5x: time: unknown unit "x" in duration "5x"',
            id="every-bad-unit",
        ),
    ],
)
def test_schedule_refused_as_robfig_cron_refuses(schedule: str, message: str) -> None:
    with pytest.raises(ScheduleError) as raised:
        check_schedule(schedule)
    assert str(raised.value) == message
    _obj, errs = create("cronjobs", cronjob(schedule))
    assert errs[0] == f'spec.schedule: Invalid value: "{schedule}": {message}'


@pytest.mark.parametrize(
    "schedule",
    [
        "*/5 * * * *",
        "0 9 * * mon-fri",
        "0 0 1 JAN *",
        "*/61 * * * *",
        "0 0 ? * *",
        "@hourly",
        "@every 1h30m",
        ",5 * * * *",
    ],
)
def test_schedule_accepted(schedule: str) -> None:
    check_schedule(schedule)
    _obj, errs = create("cronjobs", cronjob(schedule))
    assert errs == []


def test_schedule_time_zone_rules() -> None:
    _obj, errs = create("cronjobs", cronjob("TZ=UTC 0 0 * * *"))
    assert errs == [
        'spec.schedule: Invalid value: "TZ=UTC 0 0 * * *": cannot use TZ or CRON_TZ in schedule, use timeZone '
        "field instead"
    ]
    _obj, errs = create("cronjobs", cronjob(timeZone="Europe/Pariss"))
    assert errs == ['spec.timeZone: Invalid value: "Europe/Pariss": unknown time zone Europe/Pariss']
    _obj, errs = create("cronjobs", cronjob(timeZone="Local"))
    assert errs == [
        'spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as defined in '
        "https://www.iana.org/time-zones"
    ]
    obj, errs = create("cronjobs", cronjob(timeZone="Europe/Paris"))
    assert errs == []
    # an object stored with a TZ in its schedule (from before the rule) may keep it, but not with a timeZone
    old = copy.deepcopy(obj)
    old["spec"]["schedule"] = "CRON_TZ=UTC 0 0 * * *"
    del old["spec"]["timeZone"]
    kept = copy.deepcopy(old)
    kept["spec"]["suspend"] = True
    assert update("cronjobs", kept, old) == []
    both = copy.deepcopy(kept)
    both["spec"]["timeZone"] = "UTC"
    assert update("cronjobs", both, old) == [
        'spec.schedule: Invalid value: "CRON_TZ=UTC 0 0 * * *": cannot use both timeZone field and TZ or CRON_TZ in '
        "schedule"
    ]


def test_cronjob_job_template_and_name() -> None:
    body = cronjob(concurrencyPolicy="Sometimes")
    body["spec"]["jobTemplate"]["spec"]["selector"] = {"matchLabels": {"a": "b"}}
    body["metadata"]["name"] = "n" * 53
    _obj, errs = create("cronjobs", body)
    assert errs == [
        'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"',
        'spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated",
        f'metadata.name: Invalid value: "{"n" * 53}": must be no more than 52 characters',
    ]
    _obj, errs = create("cronjobs", cronjob(schedule=""))
    assert errs == ["spec.schedule: Required value"]


# ---- HorizontalPodAutoscaler ------------------------------------------------------------------------------------


def hpa(**spec: Any) -> dict[str, Any]:
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    return {
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": ref, "maxReplicas": 5, **spec},
    }


def test_hpa_defaults() -> None:
    obj, errs = create("horizontalpodautoscalers", hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}}))
    assert errs == []
    spec = obj["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
    ]
    assert spec["behavior"]["scaleUp"] == {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }
    assert spec["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 60,
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }
    assert obj["status"] == {"desiredReplicas": 0}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"minReplicas": 0}, "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1", id="min-zero"
        ),
        pytest.param(
            {"minReplicas": 6},
            "spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`",
            id="max-below-min",
        ),
        pytest.param({"maxReplicas": 0}, "spec.maxReplicas: Invalid value: 0: must be greater than 0", id="max-zero"),
        pytest.param(
            {"scaleTargetRef": {"kind": "Deployment"}}, "spec.scaleTargetRef.name: Required value", id="ref-name"
        ),
        pytest.param(
            {"scaleTargetRef": {"kind": "Deployment", "name": "a/b"}},
            "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
            id="ref-slash",
        ),
        pytest.param(
            {"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]},
            "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value "
            "or a target utilization",
            id="resource-target",
        ),
        pytest.param(
            {
                "metrics": [
                    {
                        "type": "Pods",
                        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 5}},
                    }
                ]
            },
            "spec.metrics[0].pods: Required value: must populate information for the given metric source",
            id="wrong-source",
        ),
        pytest.param(
            {"metrics": [{"type": "Magic"}]},
            'spec.metrics[0].type: Unsupported value: "Magic": supported values: "ContainerResource", "External", '
            '"Object", "Pods", "Resource"',
            id="unknown-type",
        ),
        pytest.param(
            {
                "metrics": [
                    {
                        "type": "Pods",
                        "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "-1"}},
                    }
                ]
            },
            'spec.metrics[0].pods.target.averageValue: Invalid value: "-1": must be positive',
            id="negative-quantity",
        ),
        pytest.param(
            {"behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 4000}]}}},
            "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 4000: must be less than or equal to 1800",
            id="policy-period",
        ),
    ],
)
def test_hpa_validation(spec: dict[str, Any], expected: str) -> None:
    _obj, errs = create("horizontalpodautoscalers", hpa(**spec))
    assert expected in errs


def test_hpa_both_sources_forbidden() -> None:
    pods = {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1"}}
    resource = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}
    _obj, errs = create("horizontalpodautoscalers", hpa(metrics=[{"type": "Pods", "pods": pods, "resource": resource}]))
    assert errs == ["spec.metrics[0].resource: Forbidden: must populate the given metric source only"]


def test_quantity_sign() -> None:
    assert [quantity_sign(q) for q in ("100m", "0", "0.0Mi", "-1", 3, 0, "x")] == [1, 0, 0, -1, 1, 0, 0]


# ---- PodDisruptionBudget ----------------------------------------------------------------------------------------


def pdb(**spec: Any) -> dict[str, Any]:
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }


def test_pdb() -> None:
    obj, errs = create("poddisruptionbudgets", pdb(minAvailable="50%"))
    assert errs == []
    assert obj["status"] == {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    _obj, errs = create("poddisruptionbudgets", pdb(minAvailable=1, maxUnavailable=1))
    assert errs == [
        "spec: Invalid value: policy.PodDisruptionBudgetSpec{...}: minAvailable and maxUnavailable cannot be both set"
    ]
    _obj, errs = create("poddisruptionbudgets", pdb(maxUnavailable="half"))
    assert errs == [
        'spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"half"}: a valid percent '
        "string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation "
        "is '[0-9]+%')"
    ]
    _obj, errs = create("poddisruptionbudgets", pdb(minAvailable=-1, unhealthyPodEvictionPolicy="Never"))
    assert errs == [
        "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0",
        'spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", '
        '"IfHealthyBudget"',
    ]


def test_invalid_object_message_names_the_kind() -> None:
    obj, _errs = create("poddisruptionbudgets", pdb(minAvailable=-1))
    errors_ = strategy("poddisruptionbudgets").validate(obj, None)
    message = invalid_object("PodDisruptionBudget", "web", errors_, "policy").message
    assert message == (
        'PodDisruptionBudget.policy "web" is invalid: spec.minAvailable: Invalid value: -1: must be greater than or '
        "equal to 0"
    )


def test_strategies_survive_bodies_of_the_wrong_shape() -> None:
    for plural in STRATEGIES:
        for body in ({"spec": []}, {"spec": {"template": "x", "selector": 3, "jobTemplate": [], "metrics": "m"}}):
            _obj, errs = create(plural, {"metadata": {"name": "x"}, **copy.deepcopy(body)})
            assert isinstance(errs, list), plural


# ---- printers -----------------------------------------------------------------------------------------------------


def cells(plural: str, obj: dict[str, Any]) -> list[Any]:
    obj = {"metadata": {"name": "web", "creationTimestamp": CREATED}, **obj}
    return PRINTERS[plural].cells(obj, NOW)


def names(plural: str) -> list[str]:
    return [c.name for c in PRINTERS[plural].columns]


def test_printer_columns() -> None:
    assert names("statefulsets") == ["Name", "Ready", "Age", "Containers", "Images"]
    assert names("daemonsets") == [
        "Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers",
        "Images", "Selector",
    ]  # fmt: skip
    assert names("controllerrevisions") == ["Name", "Controller", "Revision", "Age"]
    assert names("replicationcontrollers") == [
        "Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector",
    ]  # fmt: skip
    assert names("jobs") == ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"]
    assert names("cronjobs") == [
        "Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers", "Images",
        "Selector",
    ]  # fmt: skip
    assert names("horizontalpodautoscalers") == [
        "Name",
        "Reference",
        "Targets",
        "MinPods",
        "MaxPods",
        "Replicas",
        "Age",
    ]
    assert names("poddisruptionbudgets") == ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"]
    workloads = ("statefulsets", "daemonsets", "controllerrevisions", "replicationcontrollers", "jobs", "cronjobs")
    workloads += ("horizontalpodautoscalers", "poddisruptionbudgets")
    wide = {c.name for plural in workloads for c in PRINTERS[plural].columns if c.priority == 1}
    assert wide == {"Containers", "Images", "Selector"}


def test_statefulset_and_daemonset_cells() -> None:
    spec = {"replicas": 3, "template": template(), "selector": {"matchLabels": {"app": "web"}}}
    assert cells("statefulsets", {"spec": spec, "status": {"readyReplicas": 2}}) == [
        "web",
        "2/3",
        "60m",
        "app",
        "nginx:1.27",
    ]
    ds_spec = {**spec, "template": {**template(), "spec": {**template()["spec"], "nodeSelector": {"disk": "ssd"}}}}
    status = {
        "desiredNumberScheduled": 3,
        "currentNumberScheduled": 2,
        "numberReady": 1,
        "updatedNumberScheduled": 2,
        "numberAvailable": 1,
    }
    assert cells("daemonsets", {"spec": ds_spec, "status": status}) == [
        "web", 3, 2, 1, 2, 1, "disk=ssd", "60m", "app", "nginx:1.27", "app=web",
    ]  # fmt: skip
    assert cells("daemonsets", {"spec": {}})[6] == "<none>"
    assert cells("daemonsets", {"spec": {}})[-1] == "<none>"


def test_controller_revision_cells() -> None:
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": UID, "controller": True}
    obj = {"metadata": {"name": "web-7d4", "creationTimestamp": CREATED, "ownerReferences": [owner]}, "revision": 2}
    assert PRINTERS["controllerrevisions"].cells(obj, NOW) == ["web-7d4", "statefulset.apps/web", 2, "60m"]
    assert cells("controllerrevisions", {"revision": 1})[1] == "<none>"


def test_replication_controller_cells() -> None:
    spec = {"replicas": 2, "selector": {"app": "web", "a": "b"}, "template": template()}
    assert cells("replicationcontrollers", {"spec": spec, "status": {"replicas": 2, "readyReplicas": 1}}) == [
        "web", 2, 2, 1, "60m", "app", "nginx:1.27", "a=b,app=web",
    ]  # fmt: skip


def _conditions(kind: str, status: str = "True") -> dict[str, Any]:
    return {"conditions": [{"type": kind, "status": status}]}


_STARTED = {"startTime": "2024-05-01T11:58:00Z"}
_DONE = {"startTime": CREATED, "completionTime": "2024-05-01T11:00:42Z", **_conditions("Complete")}
_GONE = {"deletionTimestamp": CREATED}


@pytest.mark.parametrize(
    ("spec", "status", "meta", "expected"),
    [
        pytest.param({"completions": 3}, {"succeeded": 1, **_STARTED}, {}, ["Running", "1/3", "2m"], id="running"),
        pytest.param({"completions": 1}, {"succeeded": 1, **_DONE}, {}, ["Complete", "1/1", "42s"], id="complete"),
        pytest.param({"parallelism": 2}, {}, {}, ["Running", "0/1 of 2", ""], id="parallel-no-completions"),
        pytest.param({}, _conditions("Failed"), {}, ["Failed", "0/1", ""], id="failed"),
        pytest.param({}, _conditions("Suspended"), _GONE, ["Terminating", "0/1", ""], id="terminating"),
        pytest.param({}, _conditions("Suspended"), {}, ["Suspended", "0/1", ""], id="suspended"),
        pytest.param({}, _conditions("Complete", "False"), {}, ["Running", "0/1", ""], id="false-condition"),
    ],
)
def test_job_cells(spec: dict[str, Any], status: dict[str, Any], meta: dict[str, Any], expected: list[Any]) -> None:
    obj = {"metadata": {"name": "pi", "creationTimestamp": CREATED, **meta}, "spec": spec, "status": status}
    row = PRINTERS["jobs"].cells(obj, NOW)
    assert row[1:4] == expected
    assert row[-1] == "<none>"


def test_cronjob_cells() -> None:
    job_spec = {"template": template(restart="OnFailure")}
    spec = {"schedule": "*/5 * * * *", "suspend": False, "jobTemplate": {"spec": job_spec}}
    status = {"active": [{"name": "a"}, {"name": "b"}], "lastScheduleTime": "2024-05-01T11:55:00Z"}
    assert cells("cronjobs", {"spec": spec, "status": status}) == [
        "web", "*/5 * * * *", "<none>", "False", 2, "5m", "60m", "app", "nginx:1.27", "<none>",
    ]  # fmt: skip
    row = cells("cronjobs", {"spec": {"schedule": "@hourly", "timeZone": "Etc/UTC"}})
    assert row[2:6] == ["Etc/UTC", "<unset>", 0, "<none>"]


def test_hpa_cells() -> None:
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
    spec = {
        "scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 5,
        "metrics": [cpu],
    }
    assert cells("horizontalpodautoscalers", {"spec": spec, "status": {"currentReplicas": 2}}) == [
        "web", "Deployment/web", "cpu: <unknown>/80%", "1", 5, 2, "60m",
    ]  # fmt: skip
    current = [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12, "averageValue": "3m"}}}
    ]
    assert format_hpa_metrics([cpu], current) == "cpu: 12%/80%"
    pods = {
        "type": "Pods",
        "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}},
    }
    obj_avg = {
        "type": "Object",
        "object": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "2k"}},
    }
    external = {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "30"}}}
    memory = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
    }
    assert format_hpa_metrics([pods, obj_avg], []) == "<unknown>/10, <unknown>/2k (avg)"
    assert format_hpa_metrics([external, memory, cpu], []) == "<unknown>/30, memory: <unknown>/1Gi + 1 more..."
    assert format_hpa_metrics([], []) == "<none>"
    assert format_hpa_metrics([{"type": "Weird"}], []) == "<unknown type>"
    assert cells("horizontalpodautoscalers", {"spec": {"maxReplicas": 3}})[3] == "<unset>"


def test_pdb_cells() -> None:
    assert cells("poddisruptionbudgets", {"spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}}) == [
        "web", "50%", "N/A", 1, "60m",
    ]  # fmt: skip
    assert cells("poddisruptionbudgets", {"spec": {"maxUnavailable": 1}})[1:3] == ["N/A", "1"]


# ---- over HTTP against a real apiserver -------------------------------------------------------------------------

TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


def test_api_job_selector_generated(api: httpx.Client, namespace: str) -> None:
    response = api.post(f"/apis/batch/v1/namespaces/{namespace}/jobs", json=job())
    assert response.status_code == 201, response.text
    created = response.json()
    uid = created["metadata"]["uid"]
    assert created["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert created["metadata"]["labels"]["job-name"] == "pi"


def test_api_cronjob_schedule_refused(api: httpx.Client, namespace: str) -> None:
    response = api.post(f"/apis/batch/v1/namespaces/{namespace}/cronjobs", json=cronjob("61 * * * *"))
    assert response.status_code == 422, response.text
    assert response.json()["message"] == (
        'CronJob.batch "tick" is invalid: spec.schedule: Invalid value: "61 * * * *": '
        "end of range (61) above maximum (59): 61"
    )


def test_api_hpa_served_in_v1_and_v2(api: httpx.Client, namespace: str) -> None:
    body = hpa(metrics=[cpu_metric(50)])
    response = api.post(f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers", json=body)
    assert response.status_code == 201, response.text
    v1 = api.get(f"/apis/autoscaling/v1/namespaces/{namespace}/horizontalpodautoscalers/web").json()
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 50
    assert v1["spec"]["minReplicas"] == 1


def test_api_statefulset_table_and_forbidden_update(api: httpx.Client, namespace: str) -> None:
    base = f"/apis/apps/v1/namespaces/{namespace}/statefulsets"
    response = api.post(base, json=workload("StatefulSet", serviceName="web", replicas=0))
    assert response.status_code == 201, response.text
    table = api.get(base, headers=TABLE).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Ready", "Age", "Containers", "Images"]
    assert table["rows"][0]["cells"][:2] == ["web", "0/0"]
    patch = {"spec": {"serviceName": "other"}}
    response = api.patch(f"{base}/web", json=patch, headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 422, response.text
    assert "updates to statefulset spec for fields other than" in response.json()["message"]


def cpu_metric(utilization: int) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": utilization}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}
