"""The Kubernetes-compatible REST apiserver.

The spine is at the top: `app` (the Starlette application, its lifespan and middleware), `handlers` (one route
for the REST verbs of every resource), `listing` (LIST), `watch` (WATCH), `discovery`, `answered` and `componentstatus`
(resources answered per request, never stored), `crds` (serving custom resources), `events`, `metrics`. The rooms:

    http/        the HTTP edge: limits, negotiation, request info, WebSocket and raw upgrades, TLS peer certificates
    auth/        authentication, tokens, impersonation, authorization (RBAC), the review resources
    schema/      OpenAPI documents, decode types, field validation, field manager (server-side apply)
    storage/     the watch cache, consistent reads, shared etcd leases
    connect/     what is relayed to node agents and pods: exec/attach/portforward, logs, proxy, metrics-server
    bootstrap/   what start-up creates: PKI, system objects, the `kubernetes` endpoints
    registry/    the generic write path (create, update, patch, delete) over the store
    kinds/       one home per API group: strategies, validation, printers
    admission/   admission plugins;   allocators/   Service IP and NodePort allocation
"""
