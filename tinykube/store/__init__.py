"""etcd access for the apiserver: one key per object, revisions as resourceVersions, CAS transactions, watches."""
