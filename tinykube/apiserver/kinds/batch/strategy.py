"""Strategies for batch/v1 Jobs and CronJobs, with upstream 1.32's defaulting (`pkg/apis/batch/v1/defaults.go`) and
validation field paths and messages (`pkg/apis/batch/validation`): a Job's generated selector and labels, what of
its spec may change after creation (of its pod template, only the scheduling directives, and only while it is
suspended and has never started), and a CronJob's schedule, refused where upstream's cron parser (robfig/cron)
refuses it, with its messages.

Their controllers are elsewhere (issue 13). A whole pod template inside a field error is abbreviated as
`core.PodTemplateSpec{...}`, and a success policy as `batch.SuccessPolicy{...}`: Go's `%#v` of them is too long to
be useful (and shows pointers' addresses).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from tinykube.api import errors
from tinykube.api.cron import ScheduleError, check_schedule, load_location_error
from tinykube.api.errors import ErrorType, FieldError, go_value, invalid, not_supported, required, too_many
from tinykube.api.jsonshape import as_dict, as_int
from tinykube.api.meta import dns1123_label
from tinykube.api.selectors import selector_from_label_selector
from tinykube.apiserver.kinds.networking.strategy import domain_prefixed_path_errors
from tinykube.apiserver.kinds.workloads import (
    default_template,
    immutable_selector,
    nonnegative_fields,
    selector_mismatch,
    setdefault_dict,
    spec_to_default,
    template_errors,
    template_pod_spec,
    workload_label_selector_errors,
)
from tinykube.apiserver.registry.generic import ORPHAN_DEPENDENTS, Strategy, asks_no_propagation
from tinykube.apiserver.registry.gosyntax import go_invalid, go_selector, go_string_map
from tinykube.apiserver.registry.validation import IMMUTABLE, immutable, nonnegative

_TEMPLATE_DUMP = "core.PodTemplateSpec{...}"
_SUCCESS_POLICY_DUMP = "batch.SuccessPolicy{...}"


# ---- Job --------------------------------------------------------------------------------------------------------

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
_MAX_INDEXED_PARALLELISM = 100_000
_MAX_FAILED_INDEXES = 100_000
_COMPLETIONS_SOFT_LIMIT = 100_000  # past it, backoffLimitPerIndex needs maxFailedIndexes and the limit below
_HIGH_COMPLETIONS_LIMIT = 10_000  # for parallelism and maxFailedIndexes then
_MAX_MANAGED_BY = 63
_POLICY_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]
_MAX_SUCCESS_RULES = 20
_MAX_SUCCEEDED_INDEXES = 64 * 1024  # bytes of a rule's `succeededIndexes`
_COMPLETION_MODES = ["NonIndexed", "Indexed"]
_REPLACEMENT_POLICIES = ["Failed", "TerminatingOrFailed"]


def _default_job_spec(spec: dict[str, Any]) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    policy = spec.get("podFailurePolicy")
    for rule in as_dict(policy).get("rules") or []:
        for pattern in as_dict(rule).get("onPodConditions") or []:
            if isinstance(pattern, dict) and not pattern.get("status"):
                pattern["status"] = "True"
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if policy is not None else "TerminatingOrFailed"
    default_template(spec)


def _default_job_labels(obj: dict[str, Any]) -> None:
    """A Job without labels has its template's (upstream's defaulting copies them on every decode, so after the
    selector was generated)."""
    labels = as_dict(as_dict(as_dict(obj.get("spec")).get("template")).get("metadata")).get("labels")
    if isinstance(labels, dict) and labels and not obj["metadata"].get("labels"):
        obj["metadata"]["labels"] = dict(labels)


def _generate_selector(obj: dict[str, Any]) -> None:
    """Label the template with the Job's name and uid (labels the user set are kept, and validation refuses them
    if they do not fit), and select on the uid label: no other Job's pods can match."""
    meta, spec = obj["metadata"], as_dict(obj.get("spec"))
    template = setdefault_dict(spec, "template")
    labels = setdefault_dict(setdefault_dict(template, "metadata"), "labels")
    for key in (LEGACY_JOB_NAME, JOB_NAME):
        labels.setdefault(key, meta.get("name", ""))
    for key in (LEGACY_CONTROLLER_UID, CONTROLLER_UID):
        labels.setdefault(key, meta.get("uid", ""))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match_labels = setdefault_dict(selector, "matchLabels")
    match_labels.setdefault(CONTROLLER_UID, meta.get("uid", ""))


def _manual_selector(spec: dict[str, Any]) -> bool:
    return spec.get("manualSelector") is True


def _has_label(labels: dict[str, Any], key: str, expected: str) -> list[FieldError]:
    path = f"spec.template.metadata.labels[{key}]"
    if key not in labels:
        return [required(path, expected)]
    if labels[key] != expected:
        return [go_invalid(path, go_string_map(labels), f"must be '{expected}'")]
    return []


def _generated_selector_errors(obj: dict[str, Any], *, prefixed: bool) -> list[FieldError]:
    """validateGeneratedSelector: a generated selector and its template labels are the Job's uid and name."""
    spec, meta = as_dict(obj.get("spec")), obj["metadata"]
    if _manual_selector(spec) or spec.get("selector") is None:
        return []
    uid, name = str(meta.get("uid", "")), str(meta.get("name", ""))
    errs = [] if uid else [required("metadata.uid")]
    labels = as_dict(as_dict(as_dict(spec.get("template")).get("metadata")).get("labels"))
    expected = {LEGACY_CONTROLLER_UID: uid, LEGACY_JOB_NAME: name}
    if prefixed:
        expected |= {CONTROLLER_UID: uid, JOB_NAME: name}
    for key in (LEGACY_CONTROLLER_UID, LEGACY_JOB_NAME, *((CONTROLLER_UID, JOB_NAME) if prefixed else ())):
        errs += _has_label(labels, key, expected[key])
    try:
        selector = selector_from_label_selector(as_dict(spec.get("selector")))
    except errors.BadRequest:
        return errs
    if not selector.matches(expected):
        errs.append(go_invalid("spec.selector", go_selector(spec.get("selector")), "`selector` not auto-generated"))
    return errs


def _job_restart_policy_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    policy = template_pod_spec(spec.get("template")).get("restartPolicy")
    field = f"{path}.template.spec.restartPolicy"
    if policy in (None, "", "Always"):  # the pod default is Always: a Job must say how its pods end
        return [required(field, 'valid values: "OnFailure", "Never"')]
    if policy not in ("OnFailure", "Never"):
        return [not_supported(field, policy, ["OnFailure", "Never"])]
    if spec.get("podFailurePolicy") is not None and policy != "Never":
        return [invalid(field, policy, 'only "Never" is supported when podFailurePolicy is specified')]
    return []


def _indexed_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    mode = spec.get("completionMode")
    errs: list[FieldError] = []
    if mode is not None and mode not in _COMPLETION_MODES:
        errs.append(not_supported(f"{path}.completionMode", mode, _COMPLETION_MODES))
    if mode == "Indexed":
        if spec.get("completions") is None:
            errs.append(required(f"{path}.completions", "when completion mode is Indexed"))
        parallelism = as_int(spec.get("parallelism"))
        if parallelism is not None and parallelism > _MAX_INDEXED_PARALLELISM:
            message = f"must be less than or equal to {_MAX_INDEXED_PARALLELISM} when completion mode is Indexed"
            errs.append(invalid(f"{path}.parallelism", parallelism, message))
        errs += _max_failed_indexes_errors(spec, path)
    elif mode in (None, "NonIndexed"):
        for name in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(name) is not None:
                errs.append(invalid(f"{path}.{name}", spec[name], "requires indexed completion mode"))
    return errs


def _max_failed_indexes_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    """An Indexed Job's `maxFailedIndexes`, and the caps on a Job of very many completions counted per index."""
    completions, most = as_int(spec.get("completions")), as_int(spec.get("maxFailedIndexes"))
    field = f"{path}.maxFailedIndexes"
    errs: list[FieldError] = []
    if completions is not None and most is not None and most > completions:
        errs.append(invalid(field, most, "must be less than or equal to completions"))
    if most is not None and most > _MAX_FAILED_INDEXES:
        errs.append(invalid(field, most, f"must be less than or equal to {_MAX_FAILED_INDEXES}"))
    if completions is None or completions <= _COMPLETIONS_SOFT_LIMIT or spec.get("backoffLimitPerIndex") is None:
        return errs
    if spec.get("maxFailedIndexes") is None:
        errs.append(required(field, f"must be specified when completions is above {_COMPLETIONS_SOFT_LIMIT}"))
    limit = _HIGH_COMPLETIONS_LIMIT
    detail = (
        f"must be less than or equal to {limit} when completions are above {_COMPLETIONS_SOFT_LIMIT} "
        "and used with backoff limit per index"
    )
    parallelism = as_int(spec.get("parallelism"))
    if parallelism is not None and parallelism > limit:
        errs.append(invalid(f"{path}.parallelism", parallelism, detail))
    if most is not None and most > limit:
        errs.append(invalid(field, most, detail))
    return errs


def _managed_by_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    manager = spec.get("managedBy")
    if manager is None:
        return []
    field, text = f"{path}.managedBy", str(manager)
    errs = domain_prefixed_path_errors(text, field)
    if len(text.encode()) > _MAX_MANAGED_BY:
        errs.append(FieldError(ErrorType.TOO_LONG, field, detail=f"may not be more than {_MAX_MANAGED_BY} bytes"))
    return errs


def _failure_policy_action_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    """Each `podFailurePolicy` rule's action (of validatePodFailurePolicyRule): `FailIndex` only per index."""
    rules = as_dict(spec.get("podFailurePolicy")).get("rules")
    errs: list[FieldError] = []
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        action, field = as_dict(rule).get("action"), f"{path}.podFailurePolicy.rules[{i}].action"
        if not action:
            errs.append(required(field, f"valid values: [{' '.join(json.dumps(a) for a in _POLICY_ACTIONS)}]"))
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                errs.append(invalid(field, action, "requires the backoffLimitPerIndex to be set"))
        elif action not in _POLICY_ACTIONS:
            errs.append(not_supported(field, action, _POLICY_ACTIONS))
    return errs


def _success_policy_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    policy, field = spec.get("successPolicy"), f"{path}.successPolicy"
    if policy is None:
        return []
    if spec.get("completionMode") != "Indexed":
        return [go_invalid(field, _SUCCESS_POLICY_DUMP, "requires indexed completion mode")]
    rules = as_dict(policy).get("rules")
    rules = rules if isinstance(rules, list) else []
    errs: list[FieldError] = []
    if not rules:
        detail = "at least one rules must be specified when the successPolicy is specified"
        errs.append(required(f"{field}.rules", detail))
    if len(rules) > _MAX_SUCCESS_RULES:
        errs.append(too_many(f"{field}.rules", len(rules), _MAX_SUCCESS_RULES))
    completions = as_int(spec.get("completions"))
    for i, rule in enumerate(rules):
        errs += _success_rule_errors(as_dict(rule), completions, f"{field}.rules[{i}]")
    return errs


def _success_rule_errors(rule: dict[str, Any], completions: int | None, path: str) -> list[FieldError]:
    indexes, count = rule.get("succeededIndexes"), rule.get("succeededCount")
    errs: list[FieldError] = []
    if indexes is None and count is None:
        errs.append(required(path, "at least one of succeededCount or succeededIndexes must be specified"))
    total = 0
    if indexes is not None:
        field, text = f"{path}.succeededIndexes", str(indexes)
        if len(text.encode()) > _MAX_SUCCEEDED_INDEXES:
            detail = f"may not be more than {_MAX_SUCCEEDED_INDEXES} bytes"
            errs.append(FieldError(ErrorType.TOO_LONG, field, detail=detail))
        try:
            total = _index_count(text, completions)
        except ValueError as err:
            errs.append(invalid(field, text, f"error parsing succeededIndexes: {err}"))
    number, field = as_int(count), f"{path}.succeededCount"
    errs += nonnegative(count, field)
    if number is not None and completions is not None and number > completions:
        detail = f"{completions} (the number of specified completions)"
        errs.append(invalid(field, number, f"must be less than or equal to {detail}"))
    if number is not None and indexes is not None and number > total:
        detail = f"{total} (the number of indexes in the specified succeededIndexes field)"
        errs.append(invalid(field, number, f"must be less than or equal to {detail}"))
    return errs


def _index_count(text: str, completions: int | None) -> int:
    """upstream's validateIndexesFormat: how many indexes an interval list such as `1,3-5` names, each below
    `completions`, in increasing order; else a ValueError with upstream's words."""
    last: int | None = None
    total = 0
    for part in text.split(",") if text else []:
        first, end = _index_interval(part, completions)
        if last is not None and last >= first:
            raise ValueError(f"non-increasing order, previous: {last}, current: {first}")
        total, last = total + end - first + 1, end
    return total


def _index_interval(part: str, completions: int | None) -> tuple[int, int]:
    limits = part.split("-")
    if len(limits) > 2:
        raise ValueError(
            f"the fragment {go_value(part)} violates the requirement that an index interval can have at most two "
            "parts separated by '-'"
        )
    first, end = (_index(limit, completions) for limit in (limits[0], limits[-1]))
    if len(limits) == 2 and first >= end:
        raise ValueError(f"non-increasing order, previous: {first}, current: {end}")
    return first, end


def _index(text: str, completions: int | None) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(f"cannot convert string to integer for index: {go_value(text)}")
    if completions is not None and int(text) >= completions:
        raise ValueError(f"too large index: {go_value(text)}")
    return int(text)


def _replacement_policy_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    policy = spec.get("podReplacementPolicy")
    if policy is None:
        return []
    allowed = ["Failed"] if spec.get("podFailurePolicy") is not None else _REPLACEMENT_POLICIES
    return [] if policy in allowed else [not_supported(f"{path}.podReplacementPolicy", policy, allowed)]


def _job_spec_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    """validateJobSpec: what a Job's spec and a CronJob's job template share."""
    names = ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished")
    errs = nonnegative_fields(spec, (*names, "backoffLimitPerIndex", "maxFailedIndexes"), path)
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        errs.append(required(f"{path}.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    errs += _managed_by_errors(spec, path)
    errs += _indexed_errors(spec, path)
    errs += _failure_policy_action_errors(spec, path)
    errs += _success_policy_errors(spec, path)
    errs += _replacement_policy_errors(spec, path)
    errs += template_errors(spec.get("template"), f"{path}.template")
    return errs + _job_restart_policy_errors(spec, path)


def _job_selector_errors(spec: dict[str, Any]) -> list[FieldError]:
    selector = spec.get("selector")
    if selector is None:
        return [required("spec.selector")]
    errs = workload_label_selector_errors(selector, "spec.selector")
    labels = as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")
    mismatch = "`selector` does not match template `labels`"
    return errs + selector_mismatch(selector, labels, "spec.template.metadata.labels", mismatch)


def _job_name_errors(obj: dict[str, Any]) -> list[FieldError]:
    """An Indexed Job's pods are named `<job>-<index>`: the last one must still be a DNS label."""
    spec, name = as_dict(obj.get("spec")), str(obj["metadata"].get("name", ""))
    completions = as_int(spec.get("completions"))
    if spec.get("completionMode") != "Indexed" or not completions or completions <= 0:
        return []
    hostname = f"{name}-{completions - 1}"
    if not dns1123_label(hostname):
        return []
    message = f"will not able to create pod with invalid DNS label: {hostname}"
    return [invalid("metadata.name", name, message)]


def _scheduling_directives_only(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """The old template with the parts a suspended, never-started Job may change taken from the new one (node
    affinity, node selector, tolerations, scheduling gates, labels, annotations)."""
    merged = copy.deepcopy(old)
    new_meta, meta = as_dict(new.get("metadata")), setdefault_dict(merged, "metadata")
    for key in ("labels", "annotations"):
        _take(new_meta, meta, key)
    new_spec, spec = as_dict(new.get("spec")), setdefault_dict(merged, "spec")
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        _take(new_spec, spec, key)
    affinity = new_spec.get("affinity")
    old_affinity = as_dict(spec.get("affinity"))
    rest = {k: v for k, v in old_affinity.items() if k != "nodeAffinity"}
    if affinity is None and not rest:
        spec.pop("affinity", None)
    elif isinstance(affinity, dict):
        spec["affinity"] = {
            **rest,
            **({"nodeAffinity": affinity["nodeAffinity"]} if "nodeAffinity" in affinity else {}),
        }
    return merged


def _take(src: dict[str, Any], dst: dict[str, Any], key: str) -> None:
    if key in src:
        dst[key] = copy.deepcopy(src[key])
    else:
        dst.pop(key, None)


def _job_update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    errs = _completions_update_errors(spec, old_spec)
    errs += immutable_selector(spec.get("selector"), old_spec.get("selector"))
    old_template = as_dict(old_spec.get("template"))
    suspended = old_spec.get("suspend") is True and not as_dict(old.get("status")).get("startTime")
    if suspended:
        old_template = _scheduling_directives_only(as_dict(spec.get("template")), old_template)
    if spec.get("template") != old_template:
        errs.append(go_invalid("spec.template", _TEMPLATE_DUMP, IMMUTABLE))
    for name in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        errs += immutable(spec.get(name), old_spec.get(name), f"spec.{name}")
    return errs


def _completions_update_errors(spec: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """Completions are immutable, except that an Indexed Job scales by changing them with its parallelism."""
    completions = spec.get("completions")
    if completions == old.get("completions"):
        return []
    if spec.get("completionMode") != "Indexed":
        return [invalid("spec.completions", completions, IMMUTABLE)]
    if completions is not None and completions != spec.get("parallelism"):
        return [invalid("spec.completions", completions, "can only be modified in tandem with spec.parallelism")]
    return []


_JOB_DELETE_WARNING = (
    "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or "
    "set propagationPolicy=Orphan to suppress this warning"
)


class JobStrategy(Strategy):
    status_keeps_sent_metadata = True
    has_status = True
    tracks_generation = True
    gc_policy = ORPHAN_DEPENDENTS  # batch/v1 orphans a Job's pods by default, for backward compatibility

    def delete_warnings(self, options: dict[str, Any]) -> list[str]:
        return [_JOB_DELETE_WARNING] if asks_no_propagation(options) else []

    def prepare_create(self, obj: dict[str, Any]) -> None:
        super().prepare_create(obj)
        if isinstance(obj.get("spec"), dict) and not _manual_selector(obj["spec"]):
            _generate_selector(obj)  # made of the uid, which the registry has set by now
        _default_job_labels(obj)

    def default(self, obj: dict[str, Any]) -> None:
        _default_job_spec(spec_to_default(obj))
        obj.setdefault("status", {})

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_update(new, old)
        _default_job_labels(new)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = as_dict(obj.get("spec"))
        old_labels = as_dict(as_dict(as_dict(as_dict(old).get("spec")).get("template")).get("metadata")).get("labels")
        prefixed = old is None or CONTROLLER_UID in as_dict(old_labels)
        errs = _generated_selector_errors(obj, prefixed=prefixed)
        errs += _job_spec_errors(spec, "spec") + _job_selector_errors(spec)
        errs += _job_name_errors(obj)
        if old is not None:
            errs += _job_update_errors(obj, old)
        status = as_dict(obj.get("status"))
        return errs + nonnegative_fields(status, ("active", "succeeded", "failed", "ready", "terminating"), "status")


# ---- CronJob ----------------------------------------------------------------------------------------------------

_CONCURRENCY_POLICIES = ["Allow", "Forbid", "Replace"]
_TZ_NAME_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")
_MAX_CRONJOB_NAME = 52  # the controller appends an 11-character suffix to name its Jobs


def _schedule_errors(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[FieldError]:
    schedule, path = spec.get("schedule"), "spec.schedule"
    if not schedule:
        return [required(path)]
    if not isinstance(schedule, str):
        return [invalid(path, schedule, "must be a string")]
    errs: list[FieldError] = []
    try:
        check_schedule(schedule)
    except ScheduleError as err:
        errs.append(invalid(path, schedule, str(err)))
    # A TZ in the schedule is refused on create; an object that already had one may keep it (without timeZone).
    allow_tz = old_spec is not None and "TZ" in str(old_spec.get("schedule", ""))
    if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
        errs.append(invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    elif not allow_tz and "TZ" in schedule:
        errs.append(invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    return errs


def _time_zone_errors(zone: Any) -> list[FieldError]:
    path = "spec.timeZone"
    if zone is None:
        return []
    if not isinstance(zone, str) or not zone:
        return [invalid(path, zone, "timeZone must be nil or non-empty string")]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_NAME_PART.fullmatch(part):
            return [invalid(path, zone, f"unknown time zone {zone}")]
    errs: list[FieldError] = []
    if zone.lower() == "local":
        message = "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        errs.append(invalid(path, zone, message))
    if zone != "Local" and (problem := load_location_error(zone)):
        errs.append(invalid(path, zone, problem))
    return errs


def _job_template_errors(template: dict[str, Any]) -> list[FieldError]:
    """ValidateJobTemplateSpec: the selector is always generated for the Jobs a CronJob makes."""
    spec, path = as_dict(template.get("spec")), "spec.jobTemplate.spec"
    errs = _job_spec_errors(spec, path)
    if spec.get("selector") is not None:
        errs.append(go_invalid(f"{path}.selector", go_selector(spec["selector"]), "`selector` will be auto-generated"))
    if _manual_selector(spec):
        errs.append(not_supported(f"{path}.manualSelector", True, ["nil", "false"]))
    return errs


def _cronjob_spec_errors(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[FieldError]:
    errs = _schedule_errors(spec, old_spec)
    errs += nonnegative(spec.get("startingDeadlineSeconds"), "spec.startingDeadlineSeconds")
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        errs += _time_zone_errors(spec.get("timeZone"))
    policy = spec.get("concurrencyPolicy")
    if not policy:
        errs.append(required("spec.concurrencyPolicy"))
    elif policy not in _CONCURRENCY_POLICIES:
        errs.append(not_supported("spec.concurrencyPolicy", policy, _CONCURRENCY_POLICIES))
    errs += _job_template_errors(as_dict(spec.get("jobTemplate")))
    return errs + nonnegative_fields(spec, ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"), "spec")


class CronJobStrategy(Strategy):
    status_keeps_sent_metadata = True
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = spec_to_default(obj)
        spec["concurrencyPolicy"] = spec.get("concurrencyPolicy") or "Allow"
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        template = setdefault_dict(spec, "jobTemplate")
        setdefault_dict(template, "metadata").setdefault("creationTimestamp", None)
        default_template(setdefault_dict(template, "spec"))  # the pod template only: Job defaults are the Job's
        obj.setdefault("status", {})

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = as_dict(obj.get("spec"))
        errs = _cronjob_spec_errors(spec, None if old is None else as_dict(old.get("spec")))
        name = str(obj["metadata"].get("name", ""))
        if old is None and len(name) > _MAX_CRONJOB_NAME:
            errs.append(invalid("metadata.name", name, f"must be no more than {_MAX_CRONJOB_NAME} characters"))
        return errs


STRATEGIES: dict[str, type[Strategy]] = {
    "jobs": JobStrategy,
    "cronjobs": CronJobStrategy,
}
