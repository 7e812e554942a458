"""ClusterIP / NodePort / LoadBalancer IP allocators on etcd, and their repair loops. Built in the Services issue."""
