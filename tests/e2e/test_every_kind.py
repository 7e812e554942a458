"""Issue 17: every resource of kube-apiserver 1.32 is served. Discovery lists exactly them (as `kubectl
api-resources` prints them on a default cluster), a manifest with one object of every stored kind applies, and
deleting its namespace leaves nothing behind."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import httpx

from tinykube.api.resources import STORED, ResourceInfo

if TYPE_CHECKING:
    from tests.e2e.conftest import Kubectl

# `kubectl api-resources` on kind's kube-apiserver 1.32 with metrics-server installed, less apiextensions.k8s.io
# (issue 18): name, short names, apiVersion, namespaced, kind.
UPSTREAM = """
bindings - v1 true Binding
componentstatuses cs v1 false ComponentStatus
configmaps cm v1 true ConfigMap
endpoints ep v1 true Endpoints
events ev v1 true Event
limitranges limits v1 true LimitRange
namespaces ns v1 false Namespace
nodes no v1 false Node
persistentvolumeclaims pvc v1 true PersistentVolumeClaim
persistentvolumes pv v1 false PersistentVolume
pods po v1 true Pod
podtemplates - v1 true PodTemplate
replicationcontrollers rc v1 true ReplicationController
resourcequotas quota v1 true ResourceQuota
secrets - v1 true Secret
serviceaccounts sa v1 true ServiceAccount
services svc v1 true Service
mutatingwebhookconfigurations - admissionregistration.k8s.io/v1 false MutatingWebhookConfiguration
validatingadmissionpolicies - admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicy
validatingadmissionpolicybindings - admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicyBinding
validatingwebhookconfigurations - admissionregistration.k8s.io/v1 false ValidatingWebhookConfiguration
customresourcedefinitions crd,crds apiextensions.k8s.io/v1 false CustomResourceDefinition
apiservices - apiregistration.k8s.io/v1 false APIService
controllerrevisions - apps/v1 true ControllerRevision
daemonsets ds apps/v1 true DaemonSet
deployments deploy apps/v1 true Deployment
replicasets rs apps/v1 true ReplicaSet
statefulsets sts apps/v1 true StatefulSet
selfsubjectreviews - authentication.k8s.io/v1 false SelfSubjectReview
tokenreviews - authentication.k8s.io/v1 false TokenReview
localsubjectaccessreviews - authorization.k8s.io/v1 true LocalSubjectAccessReview
selfsubjectaccessreviews - authorization.k8s.io/v1 false SelfSubjectAccessReview
selfsubjectrulesreviews - authorization.k8s.io/v1 false SelfSubjectRulesReview
subjectaccessreviews - authorization.k8s.io/v1 false SubjectAccessReview
horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler
cronjobs cj batch/v1 true CronJob
jobs - batch/v1 true Job
certificatesigningrequests csr certificates.k8s.io/v1 false CertificateSigningRequest
leases - coordination.k8s.io/v1 true Lease
endpointslices - discovery.k8s.io/v1 true EndpointSlice
events ev events.k8s.io/v1 true Event
flowschemas - flowcontrol.apiserver.k8s.io/v1 false FlowSchema
prioritylevelconfigurations - flowcontrol.apiserver.k8s.io/v1 false PriorityLevelConfiguration
ingressclasses - networking.k8s.io/v1 false IngressClass
ingresses ing networking.k8s.io/v1 true Ingress
networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy
runtimeclasses - node.k8s.io/v1 false RuntimeClass
poddisruptionbudgets pdb policy/v1 true PodDisruptionBudget
clusterrolebindings - rbac.authorization.k8s.io/v1 false ClusterRoleBinding
clusterroles - rbac.authorization.k8s.io/v1 false ClusterRole
rolebindings - rbac.authorization.k8s.io/v1 true RoleBinding
roles - rbac.authorization.k8s.io/v1 true Role
priorityclasses pc scheduling.k8s.io/v1 false PriorityClass
csidrivers - storage.k8s.io/v1 false CSIDriver
csinodes - storage.k8s.io/v1 false CSINode
csistoragecapacities - storage.k8s.io/v1 true CSIStorageCapacity
storageclasses sc storage.k8s.io/v1 false StorageClass
volumeattachments - storage.k8s.io/v1 false VolumeAttachment
nodes - metrics.k8s.io/v1beta1 false NodeMetrics
pods - metrics.k8s.io/v1beta1 true PodMetrics
"""

TEMPLATE = """
    metadata: {labels: {app: every}}
    spec:
      containers: [{name: c, image: busybox}]"""

# One object of every namespaced kind that is stored (events.k8s.io and autoscaling/v1 are views of these).
NAMESPACED = f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: every}}
data: {{key: value}}
binaryData: {{blob: AAE=}}
---
apiVersion: v1
kind: Secret
metadata: {{name: every}}
stringData: {{password: hunter2}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: every}}
---
apiVersion: v1
kind: Service
metadata: {{name: every}}
spec:
  selector: {{app: every}}
  ports: [{{port: 80}}]
---
apiVersion: v1
kind: Endpoints
metadata: {{name: every-manual}}
---
apiVersion: v1
kind: Pod
metadata: {{name: every, labels: {{run: every}}}}  # not the workloads' label: their controllers would adopt it
spec:
  containers: [{{name: c, image: busybox}}]
---
apiVersion: v1
kind: Event
metadata: {{name: every}}
involvedObject: {{kind: Pod, name: every}}
reason: Testing
message: one of every kind
type: Normal
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: every}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 1Gi}}}}
---
apiVersion: v1
kind: ReplicationController
metadata: {{name: every}}
spec:
  replicas: 0
  selector: {{app: every}}
  template:{TEMPLATE}
---
apiVersion: v1
kind: ResourceQuota
metadata: {{name: every}}
spec: {{hard: {{pods: "100"}}}}
---
apiVersion: v1
kind: LimitRange
metadata: {{name: every}}
spec:
  limits: [{{type: Container, max: {{memory: 8Gi}}}}]
---
apiVersion: v1
kind: PodTemplate
metadata: {{name: every}}
template:{TEMPLATE}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: every}}
spec:
  replicas: 0
  selector: {{matchLabels: {{app: every}}}}
  template:{TEMPLATE}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {{name: every-rs}}
spec:
  replicas: 0
  selector: {{matchLabels: {{app: every}}}}
  template:{TEMPLATE}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: every}}
spec:
  replicas: 0
  serviceName: every
  selector: {{matchLabels: {{app: every}}}}
  template:{TEMPLATE}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: every}}
spec:
  selector: {{matchLabels: {{app: every}}}}
  template:
    metadata: {{labels: {{app: every}}}}
    spec:
      nodeSelector: {{none: none}}
      containers: [{{name: c, image: busybox}}]
---
apiVersion: apps/v1
kind: ControllerRevision
metadata: {{name: every}}
revision: 1
data: {{spec: {{}}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: every}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: every}}
  maxReplicas: 3
---
apiVersion: batch/v1
kind: Job
metadata: {{name: every}}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox}}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {{name: every}}
spec:
  schedule: "*/5 * * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{{name: c, image: busybox}}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {{name: every}}
spec: {{holderIdentity: someone, leaseDurationSeconds: 15}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: every-manual}}
addressType: IPv4
endpoints: []
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: every}}
spec:
  rules:
  - host: every.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {{service: {{name: every, port: {{number: 80}}}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: every}}
spec: {{podSelector: {{}}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: every}}
spec:
  minAvailable: 1
  selector: {{matchLabels: {{app: every}}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: every}}
rules: [{{apiGroups: [""], resources: [pods], verbs: [get, list]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: every}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: every}}
subjects: [{{kind: ServiceAccount, name: every}}]
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {{name: every}}
storageClassName: standard
"""


def api_resources(kubectl: Kubectl) -> set[tuple[str, ...]]:
    lines = kubectl("api-resources", "--no-headers").stdout.splitlines()
    rows = set()
    for line in lines:
        cells = re.split(r"\s+", line.strip())
        if len(cells) == 4:  # no short names
            cells.insert(1, "-")
        rows.add(tuple(cells))
    return rows


def test_discovery_lists_what_kube_apiserver_1_32_serves(kubectl: Kubectl) -> None:
    """The built-in resources, exactly: the groups of CRDs are left out, as the cluster is shared and another test's
    CRD may be serving (or still going; test_crds.py checks a CRD's discovery)."""
    expected = {tuple(line.split()) for line in UPSTREAM.strip().splitlines()}
    custom = {crd["spec"]["group"] for crd in kubectl.json("get", "customresourcedefinitions")["items"]}
    built_in = {row for row in api_resources(kubectl) if row[2].rpartition("/")[0] not in custom}
    assert built_in == expected


def test_a_manifest_of_every_namespaced_kind_applies_and_goes_with_its_namespace(
    kubectl: Kubectl, api: httpx.Client, namespace: str
) -> None:
    applied = kubectl.apply(NAMESPACED).stdout
    namespaced = [r for r in STORED if r.namespaced]
    kinds_in_manifest = set(re.findall(r"^kind: (\w+)$", NAMESPACED, re.M))
    assert kinds_in_manifest == {r.kind for r in namespaced}
    assert applied.count("created") == len(re.findall(r"^kind:", NAMESPACED, re.M)), applied
    assert "every" in kubectl("get", "all", "-o", "name").stdout

    def left(resource: ResourceInfo) -> list[str]:
        prefix = f"/api/{resource.version}" if not resource.group else f"/apis/{resource.group}/{resource.version}"
        items = api.get(f"{prefix}/namespaces/{namespace}/{resource.plural}").json()["items"]
        return [i["metadata"]["name"] for i in items]

    assert [r.plural for r in namespaced if not left(r)] == []
    kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=60s")
    assert {r.plural: left(r) for r in namespaced if left(r)} == {}
