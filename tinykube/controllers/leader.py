"""The controller manager under leader election (kube-controller-manager's `--leader-elect`, on by default): of
several controller managers against one cluster, only the holder of the `kube-system/kube-controller-manager`
Lease runs controllers; the others wait to take over.

A leader whose renewals fail stops its controllers. kube-controller-manager then exits (non-zero) and is restarted
by whatever supervises it; `tinykube controllers` does the same. The controllers inside `tinykube up` step down
and campaign again instead: exiting would stop the whole cluster for what is usually its own apiserver being slow.
"""

from __future__ import annotations

import logging
import socket
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from tinykube.client.leaderelection import ElectionConfig, LeaderElector, LeadershipLost
from tinykube.controllers.context import ControllerSettings
from tinykube.controllers.manager import run_controllers

if TYPE_CHECKING:
    from tinykube.client.informer import SharedInformers
    from tinykube.client.rest import RestClient

log = logging.getLogger(__name__)


def new_identity() -> str:
    """kube-controller-manager's holder identity: `<hostname>_<uuid>`, new for every process."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def lasting_identity(path: Path) -> str:
    """`<hostname>_<uuid>` with the uuid kept in `path`: a `tinykube up` restarted after a crash finds itself the
    holder of the Lease it left and leads at once, instead of waiting out the lease of its former self."""
    try:
        kept = str(uuid.UUID(path.read_text().strip()))
    except (OSError, ValueError):
        kept = str(uuid.uuid4())
        path.write_text(kept + "\n")
    return f"{socket.gethostname()}_{kept}"


async def run_elected_controllers(
    client: RestClient,
    names: list[str],
    election: ElectionConfig,
    *,
    step_down: bool,
    settings: ControllerSettings | None = None,
    informers: SharedInformers | None = None,
    election_client: RestClient | None = None,
) -> None:
    """Run the named controllers whenever this process holds the Lease, until cancelled (the Lease is then
    released). On a lost Lease: campaign again if `step_down`, else raise LeadershipLost.

    `election_client` reads and writes the Lease (default: `client`). Give it its own connections, as
    kube-controller-manager makes a client of its own for leader election: renewals that wait behind the
    controllers' (and a node agent's) requests for a free connection miss the renew deadline when the cluster is
    busy, and every lost term restarts the controllers, which relist everything and make it busier still."""
    elector = LeaderElector(election_client or client, election)

    async def term() -> None:
        log.info("%s leads: starting controllers %s", election.identity, ", ".join(names))
        await run_controllers(client, names, settings=settings, informers=informers)

    while True:
        try:
            await elector.run(term)
            return
        except LeadershipLost:
            if not step_down:
                raise
            log.error("leaderelection lost: controllers stopped; campaigning again")
