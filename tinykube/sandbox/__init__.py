"""The netns sandbox a cluster's dataplane lives in: the plumbing below the components that use it.

`netns` runs `ip` and enters named network namespaces (setns in a short-lived thread, `ip netns exec` for a
process); `topology` makes a cluster's LAN, its external client, its nodes' namespaces and the veths of their pods;
`loadbalancer` routes LoadBalancer addresses to a node, as a cloud's load balancer would. The node agent, the
proxy, the apiserver's dialer, trace and the UI all use them, and none of them imports another for it.
"""
