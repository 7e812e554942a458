"""Between the handlers and etcd: one watch cache per resource that GET, LIST and WATCH are served from
(`watchcache`), reads that wait for the cache to catch up with etcd (`consistency`), and etcd leases shared by
objects that expire (`leases`). The per-kind strategies are in `kinds/`, the generic write path in `registry/`.
"""
