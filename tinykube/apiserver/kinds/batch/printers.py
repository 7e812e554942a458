"""Table columns (`kubectl get`) of the batch kinds, Jobs and CronJobs, as upstream's printers
(`pkg/printers/internalversion/printers.go`, 1.32).

Descriptions are the upstream SwaggerDoc() strings of the fields each column shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_list, as_str, dicts
from tinykube.api.meta import parse_time
from tinykube.apiserver.kinds.core.template_cells import CONTAINERS_COLUMN, IMAGES_COLUMN, container_cells
from tinykube.apiserver.printing.cells import (
    age,
    format_label_selector,
    human_duration,
    int_or_zero,
    meta_of,
    name_of,
    since,
)
from tinykube.apiserver.printing.table import AGE_COLUMN, LABEL_SELECTORS_URL, NAME_COLUMN, Cells, Column, Printer

# ---- Job --------------------------------------------------------------------------------------------------------

_JOB_SELECTOR = Column(
    "Selector",
    "string",
    "A label query over pods that should match the pod count. Normally, the system sets this field for you. "
    f"More info: {LABEL_SELECTORS_URL}",
    priority=1,
)

JOB_COLUMNS = (
    NAME_COLUMN,
    Column("Status", "string", "Status of the job."),
    Column(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. "
        "However, it may decrease in reaction to scale down of elastic indexed jobs.",
    ),
    Column("Duration", "string", "Time required to complete the job."),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    _JOB_SELECTOR,
)

# The first condition that is True decides, in this order; Terminating sits between Failed and Suspended.
_JOB_STATES = ("Complete", "Failed", "Terminating", "Suspended", "FailureTarget", "SuccessCriteriaMet")


def job_status(obj: Mapping[str, Any]) -> str:
    true = {c.get("type") for c in dicts(as_dict(obj.get("status")).get("conditions")) if c.get("status") == "True"}
    for state in _JOB_STATES:
        if state == "Terminating" and meta_of(obj).get("deletionTimestamp"):
            return state
        if state in true:
            return state
    return "Running"


def job_completions(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    succeeded = int_or_zero(status.get("succeeded"))
    if isinstance(spec.get("completions"), int):
        return f"{succeeded}/{int_or_zero(spec.get('completions'))}"
    parallelism = spec.get("parallelism")
    if isinstance(parallelism, int) and parallelism > 1:
        return f"{succeeded}/1 of {parallelism}"
    return f"{succeeded}/1"


def job_duration(status: Mapping[str, Any], now: datetime) -> str:
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    if start is None:
        return ""
    if end is None:
        return since(status.get("startTime"), now)
    return human_duration((end - start).total_seconds())


def _job_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    names, images = container_cells(spec.get("template"))
    return [
        name_of(obj),
        job_status(obj),
        job_completions(spec, status),
        job_duration(status, now),
        age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


# ---- CronJob ----------------------------------------------------------------------------------------------------

CRON_JOB_COLUMNS = (
    NAME_COLUMN,
    Column("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    Column(
        "Timezone",
        "string",
        "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. "
        "If not specified, this will default to the time zone of the kube-controller-manager process. The set of "
        "valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API "
        "server during CronJob validation and the controller manager during execution. If no system-wide time zone "
        "database can be found a bundled version of the database is used instead. If the time zone name becomes "
        "invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop "
        "creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can "
        "be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
    ),
    Column(
        "Suspend",
        "boolean",
        "This flag tells the controller to suspend subsequent executions, it does not apply to already started "
        "executions.  Defaults to false.",
    ),
    Column("Active", "integer", "A list of pointers to currently running jobs."),
    Column("Last Schedule", "string", "Information when was the last time the job was successfully scheduled."),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    _JOB_SELECTOR,
)


def _bool_pointer(value: Any) -> str:
    """printBoolPtr."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return "<unset>"


def _cron_job_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    job_spec = as_dict(as_dict(spec.get("jobTemplate")).get("spec"))
    names, images = container_cells(job_spec.get("template"))
    last = status.get("lastScheduleTime")
    zone = spec.get("timeZone")
    return [
        name_of(obj),
        as_str(spec.get("schedule")),
        zone if isinstance(zone, str) else "<none>",
        _bool_pointer(spec.get("suspend")),
        len(as_list(status.get("active"))),
        since(last, now) if last else "<none>",
        age(obj, now),
        names,
        images,
        format_label_selector(job_spec.get("selector")),
    ]


PRINTERS: dict[str, Printer] = {
    "jobs": Printer(JOB_COLUMNS, _job_cells),
    "cronjobs": Printer(CRON_JOB_COLUMNS, _cron_job_cells),
}
