"""The apiserver reaching out: requests it relays to node agents and pods rather than answers from the store.

`pods/exec`, `attach` and `portforward` (`podconnect`), `pods/log` (`podlogs`), the `pods|services|nodes/proxy`
subresources (`proxy`, dialing through `dialer` into the cluster's network namespaces), and the in-process
metrics-server that scrapes every node agent (`metricsserver`).
"""
