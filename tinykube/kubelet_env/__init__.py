"""kubelet-style service environment variables for a pod. Built in the node issue."""
