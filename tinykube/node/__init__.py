"""Node agent: pod runtimes (simulated, netns), probes, pod status. Built in the node issue."""
