"""`kubectl apply -f` of a 200-object manifest that mixes the kinds issue 17 added with the first ones (target:
>= 100 objects/s; kubectl itself sends two requests per object: a GET, then the create).

Each run applies the same manifest into a fresh namespace; the rate is objects over kubectl's wall time, so it
includes kubectl's own start-up and discovery (cached after the first run, as a user's would be).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import Bench, start

KINDS = [
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}}}\ndata: {{key: value-{i}}}",
    "apiVersion: v1\nkind: Secret\nmetadata: {{name: secret-{i}}}\nstringData: {{password: p-{i}}}",
    "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: sa-{i}}}",
    "apiVersion: v1\nkind: Service\nmetadata: {{name: svc-{i}}}\n"
    "spec: {{selector: {{app: a{i}}}, ports: [{{port: 80}}]}}",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: deploy-{i}}}\nspec:\n  replicas: 0\n"
    "  selector: {{matchLabels: {{app: a{i}}}}}\n  template:\n    metadata: {{labels: {{app: a{i}}}}}\n"
    "    spec: {{containers: [{{name: c, image: nginx}}]}}",
    "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: sts-{i}}}\nspec:\n  replicas: 0\n"
    "  serviceName: svc-{i}\n  selector: {{matchLabels: {{app: s{i}}}}}\n  template:\n"
    "    metadata: {{labels: {{app: s{i}}}}}\n    spec: {{containers: [{{name: c, image: nginx}}]}}",
    "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: job-{i}}}\nspec:\n  suspend: true\n  template:\n"
    "    spec: {{restartPolicy: Never, containers: [{{name: c, image: busybox}}]}}",
    "apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: cj-{i}}}\nspec:\n  schedule: '*/5 * * * *'\n"
    "  suspend: true\n  jobTemplate:\n    spec:\n      template:\n"
    "        spec: {{restartPolicy: Never, containers: [{{name: c, image: busybox}}]}}",
    "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: role-{i}}}\n"
    "rules: [{{apiGroups: [''], resources: [pods], verbs: [get]}}]",
    "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: rb-{i}}}\n"
    "roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: role-{i}}}\n"
    "subjects: [{{kind: ServiceAccount, name: sa-{i}}}]",
    "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: pdb-{i}}}\n"
    "spec: {{minAvailable: 1, selector: {{matchLabels: {{app: a{i}}}}}}}",
    "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {{name: np-{i}}}\nspec: {{podSelector: {{}}}}",
    "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: ing-{i}}}\nspec:\n  rules:\n"
    "  - host: h{i}.example.com\n    http:\n      paths:\n      - path: /\n        pathType: Prefix\n"
    "        backend: {{service: {{name: svc-{i}, port: {{number: 80}}}}}}",
    "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {{name: hpa-{i}}}\n"
    "spec: {{scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: deploy-{i}}}, maxReplicas: 3}}",
    "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: pvc-{i}}}\n"
    "spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}",
    "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: lease-{i}}}\nspec: {{holderIdentity: h{i}}}",
]
OBJECTS = 200


def manifest() -> str:
    docs = [KINDS[n % len(KINDS)].format(i=n // len(KINDS)) for n in range(OBJECTS)]
    return "\n---\n".join(docs) + "\n"


def apply_once(bench: Bench, kubeconfig: Path, namespace: str, path: Path) -> float:
    with bench.client() as c:
        c.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).raise_for_status()
    began = time.perf_counter()
    out = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "-n", namespace, "apply", "-f", str(path)],
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - began
    if out.returncode != 0 or out.stdout.count("created") != OBJECTS:
        raise RuntimeError(f"kubectl apply failed: {out.stderr[-2000:]}")
    return took


def main(runs: int = 5) -> None:
    bench = start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "mixed.yaml"
            path.write_text(manifest())
            kubeconfig = bench.data_dir / "kubeconfig"
            apply_once(bench, kubeconfig, "warm-up", path)  # kubectl's discovery cache, as a user's would be
            took = [apply_once(bench, kubeconfig, f"apply-{n}", path) for n in range(runs)]
    finally:
        bench.stop()
    rates = [OBJECTS / t for t in took]
    print(
        f"| kubectl apply of {OBJECTS} mixed objects ({len(KINDS)} kinds), {runs} runs "
        f"| median {statistics.median(rates):.0f} objects/s | slowest {min(rates):.0f} objects/s | >= 100 objects/s |"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
