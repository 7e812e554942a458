"""The API group flowcontrol.apiserver.k8s.io: FlowSchemas and PriorityLevelConfigurations."""
