"""Server-side printing: the generic engine that turns objects into a ``meta.k8s.io/v1`` ``Table``, as the upstream
apiserver does.

Why this matters: ``kubectl get`` does not know how to print a Service or a Pod. It asks the server for a Table
(``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``) and prints the columns it gets back. A server that
cannot answer with a Table gets the generic fallback, so ``kubectl get svc`` shows only ``NAME AGE`` instead of
``TYPE CLUSTER-IP EXTERNAL-IP PORT(S)``.

This package is the engine only: columns and printers (`table`), the Table built from a printer (`table.render`)
and the formatting helpers the printers share (`cells`). Each API group's printers live in its home,
``tinykube.apiserver.kinds.<group>.printers``; ``tinykube.apiserver.kinds.printers`` merges them. The engine imports
none of them.
"""
