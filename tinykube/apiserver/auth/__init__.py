"""Who is asking and whether they may: authentication, impersonation, authorization, and the resources that put
those questions to the server.

`authentication` (x509 client certificates, the cluster token, service-account JWTs signed with `jws` and
checked by `satokens`) finds the user (`identity`); `impersonation` may swap it; the `authorization` filter asks
the `authorizer` (RBAC in `rbac_authorizer`) before any handler runs. `rbac_escalation` refuses Role writes that
grant more than the writer holds; `reviews` answers the six review kinds and `tokenrequest` issues tokens.
"""
