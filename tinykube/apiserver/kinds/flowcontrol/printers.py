"""Table columns (`kubectl get`) of the flowcontrol.apiserver.k8s.io kinds, FlowSchemas and PriorityLevelConfigurations,
as upstream's printers (pkg/printers/internalversion printers.go).

Column descriptions are the API field documentation upstream points at (ObjectMeta's for NAME and AGE).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_str, dicts
from tinykube.apiserver.printing.cells import age, int_or_zero, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Cells, Column, Printer

FLOW_SCHEMA_COLUMNS = (
    NAME_COLUMN,
    Column(
        "PriorityLevel", "string", "`name` is the name of the priority level configuration being referenced Required."
    ),
    Column(
        "MatchingPrecedence",
        "string",
        "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen "
        "FlowSchema is among those with the numerically lowest (which we take to be logically highest) "
        "MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the "
        "precedence is not specified, it will be set to 1000 as default.",
    ),
    Column(
        "DistinguisherMethod",
        "string",
        "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. "
        "`nil` specifies that the distinguisher is disabled and thus will always be the empty string.",
    ),
    AGE_COLUMN,
    Column("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
)


def _flow_schema_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    method = spec.get("distinguisherMethod")
    dangling = next(
        (
            as_str(c.get("status"))
            for c in dicts(as_dict(obj.get("status")).get("conditions"))
            if c.get("type") == "Dangling"
        ),
        "?",
    )
    return [
        name_of(obj),
        as_str(as_dict(spec.get("priorityLevelConfiguration")).get("name")),
        int_or_zero(spec.get("matchingPrecedence")),
        as_str(method.get("type")) if isinstance(method, dict) else "<none>",
        age(obj, now),
        dangling,
    ]


PRIORITY_LEVEL_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Type",
        "string",
        "`type` indicates whether this priority level is subject to limitation on request execution.  A value of "
        '`"Exempt"` means that requests of this priority level are not subject to a limit (and thus are never '
        "queued) and do not detract from the capacity made available to other priority levels.  A value of "
        '`"Limited"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the '
        "server's limited capacity is made available exclusively to this priority level. Required.",
    ),
    Column(
        "NominalConcurrencyShares",
        "string",
        "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) "
        "of this level. This is the number of execution seats available at this priority level.",
    ),
    Column(
        "Queues",
        "string",
        "`queues` is the number of queues for this priority level. The queues exist independently at each "
        "apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus "
        "makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of "
        "64.",
    ),
    Column(
        "HandSize",
        "string",
        "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.",
    ),
    Column(
        "QueueLengthLimit",
        "string",
        "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this "
        "priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, "
        "it will be defaulted to 50.",
    ),
    AGE_COLUMN,
)


def _priority_level_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    limited = spec.get("limited")
    shares: Any = "<none>"
    queuing_cells: list[Any] = ["<none>"] * 3
    if isinstance(limited, dict):
        shares = int_or_zero(limited.get("nominalConcurrencyShares"))
        queuing = as_dict(limited.get("limitResponse")).get("queuing")
        if isinstance(queuing, dict):
            queuing_cells = [int_or_zero(queuing.get(k)) for k in ("queues", "handSize", "queueLengthLimit")]
    return [name_of(obj), as_str(spec.get("type")), shares, *queuing_cells, age(obj, now)]


PRINTERS: dict[str, Printer] = {
    "flowschemas": Printer(FLOW_SCHEMA_COLUMNS, _flow_schema_cells),
    "prioritylevelconfigurations": Printer(PRIORITY_LEVEL_COLUMNS, _priority_level_cells),
}
