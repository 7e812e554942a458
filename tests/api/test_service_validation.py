"""Service validation (upstream ValidateService / ValidateServiceUpdate): exact messages, order and cause reasons.

Expected strings are the `"<field>: <body>"` renderings of reference/k8s-behaviour.md §0 and §4.5, test vectors 9-21.
Inputs are v1-defaulted Services, as the registry hands them to validation.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tinykube.api.errors import invalid_object
from tinykube.apiserver.kinds.core.service_validation import (
    externally_accessible,
    is_headless,
    needs_health_check,
    validate_cluster_ips_related,
    validate_service,
)
from tinykube.apiserver.registry.netvalidation import (
    cidr_errors,
    iana_port_name_errors,
    ip_errors,
    non_special_ip_errors,
    port_number_errors,
)

IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
CIDR_MSG = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
PORT_MSG = "must be between 1 and 65535, inclusive"
LB_ONLY = "may only be used when `type` is 'LoadBalancer'"
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
QUALIFIED_NAME_MSG = (
    "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
    "(e.g. 'example.com/MyName')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def port(number: int = 80, **fields: Any) -> dict[str, Any]:
    """A defaulted ServicePort: protocol TCP, targetPort = port."""
    return {"port": number, "protocol": "TCP", "targetPort": number, **fields}


def cluster_ip(**spec: Any) -> dict[str, Any]:
    """A defaulted, allocated ClusterIP Service; keyword arguments replace spec fields (None removes one)."""
    base: dict[str, Any] = {
        "type": "ClusterIP",
        "selector": {"app": "web"},
        "ports": [port()],
        "clusterIP": "10.0.0.5",
        "clusterIPs": ["10.0.0.5"],
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "sessionAffinity": "None",
        "internalTrafficPolicy": "Cluster",
    }
    base.update(spec)
    return {
        "metadata": {"name": "foo", "namespace": "default"},
        "spec": {k: v for k, v in base.items() if v is not None},
    }


def node_port(**spec: Any) -> dict[str, Any]:
    return cluster_ip(
        **{"type": "NodePort", "externalTrafficPolicy": "Cluster", "ports": [port(nodePort=30080)], **spec}
    )


def load_balancer(**spec: Any) -> dict[str, Any]:
    return node_port(**{"type": "LoadBalancer", "allocateLoadBalancerNodePorts": True, **spec})


def external_name(name: str = "db.example.com", **spec: Any) -> dict[str, Any]:
    unset = dict.fromkeys(("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"))
    return cluster_ip(**{"type": "ExternalName", "externalName": name, "selector": None, **unset, **spec})


def headless(**spec: Any) -> dict[str, Any]:
    return cluster_ip(**{"clusterIP": "None", "clusterIPs": ["None"], **spec})


def errors(svc: Any, old: dict[str, Any] | None = None) -> list[str]:
    return [str(e) for e in validate_service(svc, old)]


# --- valid services --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "svc",
    [
        pytest.param(cluster_ip(), id="cluster-ip"),
        pytest.param(cluster_ip(clusterIP=None, clusterIPs=None, ipFamilies=None), id="cluster-ip-before-allocation"),
        pytest.param(headless(ports=None, selector=None), id="headless-portless"),
        pytest.param(headless(ports=[port(80, targetPort=8080)]), id="headless-any-target-port"),
        pytest.param(node_port(), id="node-port"),
        pytest.param(
            node_port(
                ports=[
                    port(53, name="dns-tcp", nodePort=30053),
                    port(53, name="dns-udp", protocol="UDP", nodePort=30053),
                ]
            ),
            id="same-node-port-tcp-and-udp",
        ),
        pytest.param(load_balancer(externalTrafficPolicy="Local", healthCheckNodePort=30100), id="lb-local"),
        pytest.param(load_balancer(loadBalancerClass="example.com/internal-vip"), id="lb-class"),
        pytest.param(load_balancer(loadBalancerSourceRanges=[" 10.0.0.0/8 ", "2001:db8::/64"]), id="source-ranges"),
        pytest.param(external_name("db.example.com."), id="external-name-trailing-dot"),
        pytest.param(external_name(ports=None), id="external-name-portless"),
        pytest.param(cluster_ip(externalIPs=["203.0.113.7"], externalTrafficPolicy="Local"), id="external-ips"),
        pytest.param(
            cluster_ip(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 86400}}),
            id="affinity-max-timeout",
        ),
        pytest.param(
            cluster_ip(
                ports=[
                    port(80, name="http", appProtocol="kubernetes.io/h2c"),
                    port(443, name="https", targetPort="tls"),
                ]
            ),
            id="named-ports-app-protocol",
        ),
        pytest.param(
            cluster_ip(
                clusterIP="10.0.0.5",
                clusterIPs=["10.0.0.5", "fd00::5"],
                ipFamilies=["IPv4", "IPv6"],
                ipFamilyPolicy="RequireDualStack",
            ),
            id="dual-stack",
        ),
        pytest.param(cluster_ip(trafficDistribution="PreferClose"), id="traffic-distribution"),
        pytest.param(
            cluster_ip(ports=[port(80, name="a"), port(80, name="b", protocol="UDP")]), id="same-port-two-protocols"
        ),
    ],
)
def test_valid_services_have_no_errors(svc: dict[str, Any]) -> None:
    assert errors(svc) == []


# --- §4.5 items 2-17, in order ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("svc", "expected"),
    [
        pytest.param(cluster_ip(ports=[]), ["spec.ports: Required value"], id="ports-required"),
        pytest.param(
            node_port(clusterIP="None", clusterIPs=["None"]),
            ["spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"],
            id="vector-18-headless-node-port",
        ),
        pytest.param(
            load_balancer(clusterIP="None", clusterIPs=["None"]),
            ["spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for LoadBalancer services"],
            id="headless-load-balancer",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, name="http"), port(443)]),
            ["spec.ports[1].name: Required value"],
            id="vector-11-name-required",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, name="http"), port(81, name="http")]),
            ['spec.ports[1].name: Duplicate value: "http"'],
            id="vector-12-duplicate-name",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, name="HTTP")]),
            [f'spec.ports[0].name: Invalid value: "HTTP": {LABEL_MSG}'],
            id="name-not-label",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, name="web.http")]),
            ['spec.ports[0].name: Invalid value: "web.http": must not contain dots'],
            id="name-with-dots",
        ),
        pytest.param(
            cluster_ip(ports=[port(0)]),
            [
                f"spec.ports[0].port: Invalid value: 0: {PORT_MSG}",
                f"spec.ports[0].targetPort: Invalid value: 0: {PORT_MSG}",
            ],
            id="vector-13-port-zero",
        ),
        pytest.param(
            cluster_ip(ports=[port(65536, targetPort=80)]),
            [f"spec.ports[0].port: Invalid value: 65536: {PORT_MSG}"],
            id="port-too-high",
        ),
        pytest.param(
            cluster_ip(ports=[port(53, protocol="ICMP")]),
            ['spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'],
            id="vector-14-protocol",
        ),
        pytest.param(
            cluster_ip(ports=[port(53, protocol="")]),
            ["spec.ports[0].protocol: Required value"],
            id="protocol-required",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, targetPort=70000)]),
            [f"spec.ports[0].targetPort: Invalid value: 70000: {PORT_MSG}"],
            id="target-port-number",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, targetPort="web_http")]),
            [
                'spec.ports[0].targetPort: Invalid value: "web_http": '
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
            ],
            id="target-port-name-charset",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, targetPort="-8080-")]),
            [
                'spec.ports[0].targetPort: Invalid value: "-8080-": must contain at least one letter (a-z)',
                'spec.ports[0].targetPort: Invalid value: "-8080-": must not begin or end with a hyphen',
            ],
            id="target-port-name-letters-and-hyphens",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, targetPort="a--very-long-name")]),
            [
                'spec.ports[0].targetPort: Invalid value: "a--very-long-name": must be no more than 15 characters',
                'spec.ports[0].targetPort: Invalid value: "a--very-long-name": must not contain consecutive hyphens',
            ],
            id="target-port-name-length-and-double-hyphen",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, appProtocol="a/b/c")]),
            [f'spec.ports[0].appProtocol: Invalid value: "a/b/c": {QUALIFIED_NAME_MSG}'],
            id="app-protocol",
        ),
        pytest.param(
            cluster_ip(selector={"app": "web server"}),
            [f'spec.selector: Invalid value: "web server": {LABEL_VALUE_MSG}'],
            id="selector",
        ),
        pytest.param(cluster_ip(sessionAffinity=""), ["spec.sessionAffinity: Required value"], id="affinity-required"),
        pytest.param(
            cluster_ip(sessionAffinity="Sticky"),
            ['spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"'],
            id="affinity-unsupported",
        ),
        pytest.param(
            cluster_ip(sessionAffinity="ClientIP"),
            ["spec.sessionAffinityConfig: Required value: when session affinity type is ClientIP"],
            id="affinity-config-required",
        ),
        pytest.param(
            cluster_ip(sessionAffinity="ClientIP", sessionAffinityConfig={}),
            ["spec.sessionAffinityConfig.clientIP: Required value: when session affinity type is ClientIP"],
            id="affinity-client-ip-required",
        ),
        pytest.param(
            cluster_ip(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {}}),
            [
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Required value: "
                "when session affinity type is ClientIP"
            ],
            id="affinity-timeout-required",
        ),
        pytest.param(
            cluster_ip(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 0}}),
            [
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: "
                "must be greater than 0 and less than 86400"
            ],
            id="vector-15-timeout-zero",
        ),
        pytest.param(
            cluster_ip(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 86401}}),
            [
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: "
                "must be greater than 0 and less than 86400"
            ],
            id="timeout-above-a-day",
        ),
        pytest.param(
            cluster_ip(sessionAffinityConfig={"clientIP": {"timeoutSeconds": 10800}}),
            ["spec.sessionAffinityConfig: Forbidden: must not be set when session affinity is None"],
            id="affinity-config-with-none",
        ),
        pytest.param(
            cluster_ip(externalIPs=["1.2.3"], externalTrafficPolicy="Cluster"),
            [f'spec.externalIPs[0]: Invalid value: "1.2.3": {IP_MSG}'],
            id="external-ip-invalid",
        ),
        pytest.param(
            cluster_ip(
                externalIPs=["0.0.0.0", "127.0.0.1", "169.254.1.1", "224.0.0.5"], externalTrafficPolicy="Cluster"
            ),
            [
                'spec.externalIPs[0]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)',
                'spec.externalIPs[1]: Invalid value: "127.0.0.1": '
                "may not be in the loopback range (127.0.0.0/8, ::1/128)",
                'spec.externalIPs[2]: Invalid value: "169.254.1.1": '
                "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                'spec.externalIPs[3]: Invalid value: "224.0.0.5": '
                "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
            ],
            id="external-ips-special-v4",
        ),
        pytest.param(
            cluster_ip(externalIPs=["::", "::1", "fe80::1", "ff02::2"], externalTrafficPolicy="Cluster"),
            [
                'spec.externalIPs[0]: Invalid value: "::": may not be unspecified (::)',
                'spec.externalIPs[1]: Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
                'spec.externalIPs[2]: Invalid value: "fe80::1": '
                "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                'spec.externalIPs[3]: Invalid value: "ff02::2": '
                "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
            ],
            id="external-ips-special-v6",
        ),
        pytest.param(cluster_ip(type=""), ["spec.type: Required value"], id="type-required"),
        pytest.param(
            cluster_ip(type="Foo"),
            [
                'spec.type: Unsupported value: "Foo": supported values: "ClusterIP", "ExternalName", "LoadBalancer", '
                '"NodePort"'
            ],
            id="type-unsupported",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, nodePort=30080)]),
            ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"],
            id="vector-9-node-port-on-cluster-ip",
        ),
        pytest.param(
            node_port(ports=[port(80, name="a", nodePort=30080), port(81, name="b", nodePort=30080)]),
            ["spec.ports[1].nodePort: Duplicate value: 30080"],
            id="duplicate-node-port",
        ),
        pytest.param(
            cluster_ip(loadBalancerSourceRanges=["10.0.0.0/8"]),
            [f"spec.LoadBalancerSourceRanges: Forbidden: {LB_ONLY}"],
            id="source-ranges-not-lb",
        ),
        pytest.param(
            load_balancer(loadBalancerSourceRanges=["10.0.0.0/8", "10.0.0.0", "10.0.0.0/33"]),
            [
                f'spec.LoadBalancerSourceRanges[1]: Invalid value: "10.0.0.0": {CIDR_MSG}',
                f'spec.LoadBalancerSourceRanges[2]: Invalid value: "10.0.0.0/33": {CIDR_MSG}',
            ],
            id="source-ranges-cidr",
        ),
        pytest.param(
            node_port(allocateLoadBalancerNodePorts=False),
            [f"spec.allocateLoadBalancerNodePorts: Forbidden: {LB_ONLY}"],
            id="allocate-node-ports-not-lb",
        ),
        pytest.param(
            load_balancer(allocateLoadBalancerNodePorts=None),
            ["allocateLoadBalancerNodePorts: Required value"],
            id="allocate-node-ports-required",
        ),
        pytest.param(
            cluster_ip(loadBalancerClass="example.com/vip"),
            [f"spec.loadBalancerClass: Forbidden: {LB_ONLY}"],
            id="lb-class-not-lb",
        ),
        pytest.param(
            load_balancer(loadBalancerClass="a/b/c"),
            [f'spec.loadBalancerClass: Invalid value: "a/b/c": {QUALIFIED_NAME_MSG}'],
            id="lb-class-format",
        ),
        pytest.param(
            cluster_ip(externalTrafficPolicy="Local"),
            ['spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services'],
            id="vector-19-etp-on-cluster-ip",
        ),
        pytest.param(
            node_port(externalTrafficPolicy=None),
            ["spec.externalTrafficPolicy: Required value"],
            id="etp-required",
        ),
        pytest.param(
            cluster_ip(externalIPs=["203.0.113.7"]),
            ["spec.externalTrafficPolicy: Required value"],
            id="etp-required-with-external-ips",
        ),
        pytest.param(
            node_port(externalTrafficPolicy="Global"),
            ['spec.externalTrafficPolicy: Unsupported value: "Global": supported values: "Cluster", "Local"'],
            id="etp-unsupported",
        ),
        pytest.param(
            node_port(externalTrafficPolicy="Local", healthCheckNodePort=30100),
            [
                "spec.healthCheckNodePort: Invalid value: 30100: "
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"
            ],
            id="hc-port-not-needed",
        ),
        pytest.param(
            load_balancer(externalTrafficPolicy="Local"),
            ["spec.healthCheckNodePort: Required value"],
            id="hc-port-required",
        ),
        pytest.param(
            load_balancer(externalTrafficPolicy="Local", healthCheckNodePort=70000),
            [f"spec.healthCheckNodePort: Invalid value: 70000: {PORT_MSG}"],
            id="hc-port-range",
        ),
        pytest.param(
            cluster_ip(internalTrafficPolicy=None),
            ["spec.internalTrafficPolicy: Required value"],
            id="itp-required",
        ),
        pytest.param(
            cluster_ip(internalTrafficPolicy="Node"),
            ['spec.internalTrafficPolicy: Unsupported value: "Node": supported values: "Cluster", "Local"'],
            id="itp-unsupported",
        ),
        pytest.param(
            cluster_ip(trafficDistribution="Anywhere"),
            [
                'spec.trafficDistribution: Unsupported value: "Anywhere": '
                'supported values: "PreferClose", "PreferSameNode", "PreferSameZone"'
            ],
            id="traffic-distribution",
        ),
    ],
)
def test_service_rules(svc: dict[str, Any], expected: list[str]) -> None:
    assert errors(svc) == expected


def test_duplicate_protocol_and_port_reports_the_go_struct() -> None:
    svc = cluster_ip(ports=[port(80, name="a"), port(80, name="b", targetPort=8080)])
    (err,) = validate_service(svc, None)
    assert str(err).startswith("spec.ports[1]: Duplicate value: core.ServicePort{")
    assert 'Protocol:"TCP"' in str(err)
    assert "Port:80," in str(err)
    assert err.cause()["reason"] == "FieldValueDuplicate"
    assert err.cause()["field"] == "spec.ports[1]"


def test_source_ranges_annotation_is_checked_when_the_field_is_empty() -> None:
    key = "service.beta.kubernetes.io/load-balancer-source-ranges"
    svc = cluster_ip()
    svc["metadata"]["annotations"] = {key: " 10.0.0.0/8 , bogus"}
    assert errors(svc) == [
        f"metadata.annotations[{key}]: Forbidden: {LB_ONLY}",
        f'metadata.annotations[{key}]: Invalid value: "bogus": {CIDR_MSG}',
    ]
    svc["spec"]["loadBalancerSourceRanges"] = ["10.0.0.0/8"]  # the field wins over the annotation
    assert errors(svc) == [f"spec.LoadBalancerSourceRanges: Forbidden: {LB_ONLY}"]


def test_topology_mode_must_match_deprecated_hints_annotation() -> None:
    svc = cluster_ip()
    svc["metadata"]["annotations"] = {
        "service.kubernetes.io/topology-mode": "Auto",
        "service.kubernetes.io/topology-aware-hints": "Disabled",
    }
    assert errors(svc) == [
        'metadata.annotations[service.kubernetes.io/topology-mode]: Invalid value: "Auto": '
        "must match annotations[service.kubernetes.io/topology-aware-hints] when both are specified"
    ]
    svc["metadata"]["annotations"]["service.kubernetes.io/topology-aware-hints"] = "Auto"
    assert errors(svc) == []


def test_errors_follow_upstream_order() -> None:
    svc = node_port(
        ports=[port(0, name="a", protocol="ICMP", nodePort=30080), port(81, nodePort=30081)],
        sessionAffinity="Sticky",
        type="NodePort",
        externalTrafficPolicy="Global",
        internalTrafficPolicy="Node",
    )
    assert errors(svc) == [
        f"spec.ports[0].port: Invalid value: 0: {PORT_MSG}",
        'spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
        f"spec.ports[0].targetPort: Invalid value: 0: {PORT_MSG}",
        "spec.ports[1].name: Required value",
        'spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"',
        'spec.externalTrafficPolicy: Unsupported value: "Global": supported values: "Cluster", "Local"',
        'spec.internalTrafficPolicy: Unsupported value: "Node": supported values: "Cluster", "Local"',
    ]


# --- ExternalName ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("svc", "expected"),
    [
        pytest.param(
            external_name("my_db"),
            [f'spec.externalName: Invalid value: "my_db": {SUBDOMAIN_MSG}'],
            id="vector-16-not-a-subdomain",
        ),
        pytest.param(
            external_name("db.example.com.."),
            [f'spec.externalName: Invalid value: "db.example.com.": {SUBDOMAIN_MSG}'],
            id="only-one-trailing-dot-trimmed",
        ),
        pytest.param(external_name(""), ["spec.externalName: Required value"], id="name-required"),
        pytest.param(external_name("."), ["spec.externalName: Required value"], id="only-a-dot"),
        pytest.param(
            external_name(clusterIP="10.0.0.5", clusterIPs=["10.0.0.5"]),
            ["spec.clusterIPs: Forbidden: may not be set for ExternalName services"],
            id="vector-17-cluster-ip",
        ),
        pytest.param(
            external_name(clusterIP="10.0.0.5"),
            ["spec.clusterIPs: Forbidden: may not be set for ExternalName services"],
            id="vector-17-cluster-ip-not-normalized",
        ),
        pytest.param(
            external_name(ipFamilies=["IPv4"], ipFamilyPolicy="SingleStack"),
            [
                "spec.ipFamilies: Forbidden: may not be set for ExternalName services",
                "spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services",
            ],
            id="ip-families",
        ),
    ],
)
def test_external_name(svc: dict[str, Any], expected: list[str]) -> None:
    assert errors(svc) == expected


# --- §4.5 item 7: cluster IP fields --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"clusterIPs": None}, ["spec.clusterIPs: Required value"], id="cluster-ips-required"),
        pytest.param(
            {"clusterIPs": ["10.0.0.6"]},
            ['spec.clusterIPs: Invalid value: []string{"10.0.0.6"}: first value must match `clusterIP`'],
            id="first-must-match",
        ),
        pytest.param(
            {"clusterIP": None},
            ['spec.clusterIPs: Invalid value: []string{"10.0.0.5"}: must be empty when `clusterIP` is not specified'],
            id="must-be-empty",
        ),
        pytest.param(
            {"ipFamilies": ["IPv5", "IPv5"], "clusterIP": None, "clusterIPs": None},
            [
                'spec.ipFamilies[0]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6"',
                'spec.ipFamilies[1]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6"',
                'spec.ipFamilies[1]: Duplicate value: "IPv5"',
            ],
            id="ip-families-unsupported-and-duplicate",
        ),
        pytest.param(
            {"ipFamilyPolicy": "DualStack"},
            [
                'spec.ipFamilyPolicy: Unsupported value: "DualStack": '
                'supported values: "PreferDualStack", "RequireDualStack", "SingleStack"'
            ],
            id="policy-unsupported",
        ),
        pytest.param(
            {"clusterIP": "None", "clusterIPs": ["None", "10.0.0.5"]},
            ['spec.clusterIPs: Invalid value: []string{"None", "10.0.0.5"}: \'None\' must be the first and only value'],
            id="none-not-alone",
        ),
        pytest.param(
            {"clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5", "x"]},
            [f'spec.clusterIPs[1]: Invalid value: "x": {IP_MSG}'],
            id="invalid-ip",
        ),
        pytest.param(
            {"clusterIP": "010.0.0.5", "clusterIPs": ["010.0.0.5"]},
            [f'spec.clusterIPs[0]: Invalid value: "010.0.0.5": {IP_MSG}'],
            id="leading-zero",
        ),
        pytest.param(
            {"clusterIP": "fe80::1%eth0", "clusterIPs": ["fe80::1%eth0"], "ipFamilies": ["IPv6"]},
            [f'spec.clusterIPs[0]: Invalid value: "fe80::1%eth0": {IP_MSG}'],
            id="zone",
        ),
        pytest.param(
            {"clusterIPs": ["10.0.0.5", "fd00::5", "10.0.0.6"], "ipFamilies": ["IPv4", "IPv6"]},
            [
                'spec.clusterIPs: Invalid value: []string{"10.0.0.5", "fd00::5", "10.0.0.6"}: '
                "may only hold up to 2 values"
            ],
            id="at-most-two",
        ),
        pytest.param(
            {"clusterIPs": ["10.0.0.5", "10.0.0.6"], "ipFamilies": ["IPv4"]},
            [
                'spec.clusterIPs: Invalid value: []string{"10.0.0.5", "10.0.0.6"}: '
                "may specify no more than one IP for each IP family"
            ],
            id="one-per-family",
        ),
        pytest.param(
            {"clusterIP": "fd00::5", "clusterIPs": ["fd00::5"], "ipFamilies": ["IPv4"]},
            ['spec.clusterIPs[0]: Invalid value: "fd00::5": expected an IPv4 value as indicated by `ipFamilies[0]`'],
            id="family-mismatch-v4",
        ),
        pytest.param(
            {"clusterIPs": ["10.0.0.5", "10.0.0.6"], "ipFamilies": ["IPv4", "IPv6"]},
            [
                'spec.clusterIPs: Invalid value: []string{"10.0.0.5", "10.0.0.6"}: '
                "may specify no more than one IP for each IP family",
                'spec.clusterIPs[1]: Invalid value: "10.0.0.6": expected an IPv6 value as indicated by `ipFamilies[1]`',
            ],
            id="family-mismatch-v6",
        ),
        pytest.param(
            {"clusterIP": "::ffff:10.0.0.5", "clusterIPs": ["::ffff:10.0.0.5"]},
            [],
            id="ipv4-mapped-counts-as-ipv4",
        ),
        pytest.param({"clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv6"]}, [], id="headless"),
        pytest.param({"type": "ExternalName", "clusterIPs": ["x", "y", "z"]}, [], id="skipped-for-external-name"),
    ],
)
def test_cluster_ips_related(spec: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in validate_cluster_ips_related(cluster_ip(**spec))] == expected


def test_cluster_ip_errors_are_part_of_validate_service() -> None:
    svc = cluster_ip(clusterIPs=["10.0.0.6"])
    assert errors(svc) == ['spec.clusterIPs: Invalid value: []string{"10.0.0.6"}: first value must match `clusterIP`']


# --- ValidateServiceUpdate -------------------------------------------------------------------------------------


DUAL = {"clusterIPs": ["10.0.0.20", "fd00::20"], "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "PreferDualStack"}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            cluster_ip(clusterIP="10.0.0.20", clusterIPs=["10.0.0.20"]),
            cluster_ip(clusterIP="10.0.0.21", clusterIPs=["10.0.0.21"]),
            ['spec.clusterIPs[0]: Invalid value: []string{"10.0.0.21"}: may not change once set'],
            id="vector-21-change-cluster-ip",
        ),
        pytest.param(
            cluster_ip(clusterIP="10.0.0.20", **DUAL),
            cluster_ip(clusterIP=None, clusterIPs=None, ipFamilies=["IPv4"], ipFamilyPolicy="SingleStack"),
            ["spec.clusterIPs[0]: Invalid value: []string(nil): primary clusterIP can not be unset"],
            id="primary-unset",
        ),
        pytest.param(
            cluster_ip(clusterIP="10.0.0.20", **DUAL),
            cluster_ip(clusterIP="10.0.0.20", clusterIPs=["10.0.0.20"], ipFamilies=["IPv4"], ipFamilyPolicy=None),
            [
                "spec.ipFamilyPolicy: Invalid value: null: "
                "must be set to 'SingleStack' when releasing the secondary clusterIP",
                "spec.ipFamilyPolicy: Invalid value: null: "
                "must be set to 'SingleStack' when releasing the secondary ipFamily",
            ],
            id="release-secondary-needs-single-stack",
        ),
        pytest.param(
            cluster_ip(clusterIP="10.0.0.20", **DUAL),
            cluster_ip(clusterIP="10.0.0.20", clusterIPs=["10.0.0.20"], ipFamilies=["IPv4"]),
            [],
            id="release-secondary-single-stack",
        ),
        pytest.param(
            cluster_ip(clusterIP="10.0.0.20", clusterIPs=["10.0.0.20"]),
            cluster_ip(clusterIP="10.0.0.20", **DUAL),
            [],
            id="add-secondary",
        ),
        pytest.param(
            cluster_ip(clusterIP="10.0.0.20", clusterIPs=["10.0.0.20"]),
            cluster_ip(clusterIP="10.0.0.21", **{**DUAL, "clusterIPs": ["10.0.0.21", "fd00::20"]}),
            ['spec.clusterIPs[0]: Invalid value: []string{"10.0.0.21", "fd00::20"}: may not change once set'],
            id="add-secondary-changing-primary",
        ),
        pytest.param(
            cluster_ip(clusterIP="10.0.0.20", **DUAL),
            cluster_ip(clusterIP="10.0.0.20", **{**DUAL, "ipFamilies": ["IPv6", "IPv4"]}),
            [
                'spec.ipFamilies[0]: Invalid value: []core.IPFamily{"IPv6", "IPv4"}: may not change once set',
                'spec.ipFamilies[1]: Invalid value: []core.IPFamily{"IPv6", "IPv4"}: may not change once set',
                'spec.clusterIPs[0]: Invalid value: "10.0.0.20": '
                "expected an IPv6 value as indicated by `ipFamilies[0]`",
                'spec.clusterIPs[1]: Invalid value: "fd00::20": expected an IPv4 value as indicated by `ipFamilies[1]`',
            ],
            id="swap-families",
        ),
        pytest.param(
            cluster_ip(clusterIP="10.0.0.20", clusterIPs=["10.0.0.20"]),
            external_name(),
            [],
            id="to-external-name",
        ),
        pytest.param(
            external_name(),
            cluster_ip(clusterIP="10.0.0.21", clusterIPs=["10.0.0.21"]),
            [],
            id="from-external-name",
        ),
        pytest.param(headless(ipFamilies=["IPv4"]), headless(ipFamilies=["IPv6"]), [], id="both-headless"),
        pytest.param(
            headless(),
            cluster_ip(),
            ['spec.clusterIPs[0]: Invalid value: []string{"10.0.0.5"}: may not change once set'],
            id="headless-to-cluster-ip",
        ),
        pytest.param(
            load_balancer(externalTrafficPolicy="Local", healthCheckNodePort=30100),
            load_balancer(externalTrafficPolicy="Local", healthCheckNodePort=30101),
            ["spec.healthCheckNodePort: Forbidden: field is immutable"],
            id="hc-port-immutable",
        ),
        pytest.param(
            load_balancer(healthCheckNodePort=None),
            load_balancer(externalTrafficPolicy="Local", healthCheckNodePort=30101),
            [],
            id="hc-port-newly-needed",
        ),
        pytest.param(
            load_balancer(loadBalancerClass="example.com/a"),
            load_balancer(loadBalancerClass="example.com/b"),
            ['spec.loadBalancerClass: Invalid value: "example.com/b": may not change once set'],
            id="lb-class-change",
        ),
        pytest.param(
            load_balancer(loadBalancerClass="example.com/a"),
            load_balancer(),
            ["spec.loadBalancerClass: Invalid value: null: may not change once set"],
            id="lb-class-unset",
        ),
        pytest.param(
            node_port(), load_balancer(loadBalancerClass="example.com/a"), [], id="lb-class-set-on-type-change"
        ),
    ],
)
def test_update_rules(old: dict[str, Any], new: dict[str, Any], expected: list[str]) -> None:
    assert errors(new, old) == expected


def test_update_rules_come_before_create_rules() -> None:
    old = cluster_ip(clusterIP="10.0.0.20", clusterIPs=["10.0.0.20"])
    new = cluster_ip(clusterIP="10.0.0.21", clusterIPs=["10.0.0.21"], sessionAffinity="")
    assert errors(new, old) == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.0.0.21"}: may not change once set',
        "spec.sessionAffinity: Required value",
    ]


def test_validation_does_not_modify_its_input() -> None:
    svc = external_name("db.example.com.", ports=[port(80, name="x")])
    before = copy.deepcopy(svc)
    validate_service(svc, cluster_ip())
    assert svc == before


# --- Status rendering ------------------------------------------------------------------------------------------


def test_vector_13_status_message_and_causes() -> None:
    err = invalid_object("Service", "foo", validate_service(cluster_ip(ports=[port(0)]), None))
    assert err.message == (
        f'Service "foo" is invalid: [spec.ports[0].port: Invalid value: 0: {PORT_MSG}, '
        f"spec.ports[0].targetPort: Invalid value: 0: {PORT_MSG}]"
    )
    assert err.details is not None
    assert err.details["causes"] == [
        {"reason": "FieldValueInvalid", "message": f"Invalid value: 0: {PORT_MSG}", "field": "spec.ports[0].port"},
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: 0: {PORT_MSG}",
            "field": "spec.ports[0].targetPort",
        },
    ]


@pytest.mark.parametrize(
    ("svc", "reason", "message"),
    [
        pytest.param(
            cluster_ip(ports=[port(80, nodePort=30080)]),
            "FieldValueForbidden",
            "Forbidden: may not be used when `type` is 'ClusterIP'",
            id="vector-9-forbidden",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, name="http"), port(443)]), "FieldValueRequired", "Required value", id="required"
        ),
        pytest.param(
            cluster_ip(ports=[port(80, name="http"), port(81, name="http")]),
            "FieldValueDuplicate",
            'Duplicate value: "http"',
            id="duplicate",
        ),
        pytest.param(
            cluster_ip(ports=[port(53, protocol="ICMP")]),
            "FieldValueNotSupported",
            'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
            id="not-supported",
        ),
    ],
)
def test_cause_reasons(svc: dict[str, Any], reason: str, message: str) -> None:
    (err,) = validate_service(svc, None)
    assert err.cause()["reason"] == reason
    assert err.cause()["message"] == message


# --- malformed input ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("svc", "expected"),
    [
        pytest.param(cluster_ip(ports="80"), ['spec.ports: Invalid value: "80": must be a list'], id="ports-not-list"),
        pytest.param(
            cluster_ip(ports=[80]), ["spec.ports[0]: Invalid value: 80: must be an object"], id="port-not-dict"
        ),
        pytest.param(
            cluster_ip(ports=[port("80")]),  # type: ignore[arg-type]
            ['spec.ports[0].port: Invalid value: "80": must be an integer'],
            id="port-string",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, targetPort=True)]),
            ["spec.ports[0].targetPort: Invalid value: true: must be an integer or a string"],
            id="target-port-bool",
        ),
        pytest.param(
            cluster_ip(ports=[port(80, nodePort=3.5)]),
            ["spec.ports[0].nodePort: Invalid value: 3.5: must be an integer"],
            id="node-port-float",
        ),
        pytest.param(
            cluster_ip(clusterIPs=["10.0.0.5", 7]),
            ["spec.clusterIPs[1]: Invalid value: 7: must be a string"],
            id="cluster-ips-element",
        ),
        pytest.param(cluster_ip(type=3), ["spec.type: Invalid value: 3: must be a string"], id="type-number"),
        pytest.param(
            cluster_ip(selector=["app"]),
            ['spec.selector: Invalid value: []string{"app"}: must be an object'],
            id="selector",
        ),
        pytest.param(
            cluster_ip(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": "1h"}}),
            ['spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: "1h": must be an integer'],
            id="timeout-string",
        ),
        pytest.param(
            cluster_ip(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": 5}),
            ["spec.sessionAffinityConfig.clientIP: Invalid value: 5: must be an object"],
            id="client-ip-not-object",
        ),
        pytest.param(
            load_balancer(allocateLoadBalancerNodePorts="yes"),
            ['spec.allocateLoadBalancerNodePorts: Invalid value: "yes": must be a boolean'],
            id="bool-string",
        ),
        pytest.param({"spec": []}, ["spec: Invalid value: []string{}: must be an object"], id="spec-not-object"),
        pytest.param(
            ["not", "a", "service"], ['Invalid value: []string{"not", "a", "service"}: must be an object'], id="list"
        ),
    ],
)
def test_malformed_input_is_a_field_error(svc: Any, expected: list[str]) -> None:
    assert errors(svc) == expected
    assert [str(e) for e in validate_cluster_ips_related(svc)] == expected


def test_missing_spec_is_validated_as_empty() -> None:
    assert errors({"metadata": {"name": "foo"}}) == [
        "spec.ports: Required value",
        "spec.sessionAffinity: Required value",
        "spec.type: Required value",
    ]


def test_malformed_old_object_skips_update_rules() -> None:
    assert errors(cluster_ip(), {"spec": {"clusterIPs": "10.0.0.1"}}) == []


# --- helpers -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10.9.8.7", []),
        ("2001:db8::ffff", []),
        ("::ffff:10.0.0.1", []),
        ("010.0.0.1", [IP_MSG]),
        ("10.0.0", [IP_MSG]),
        ("", [IP_MSG]),
        (" 10.0.0.1", [IP_MSG]),
        ("fe80::1%eth0", [IP_MSG]),
        ("10.0.0.0/8", [IP_MSG]),
    ],
)
def test_ip_errors(value: str, expected: list[str]) -> None:
    assert ip_errors(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("203.0.113.7", []),
        ("::ffff:127.0.0.1", ["may not be in the loopback range (127.0.0.0/8, ::1/128)"]),
        ("ff12::1", ["may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"]),
        ("224.0.1.1", []),
        ("bogus", ["must be a valid IP address"]),
    ],
)
def test_non_special_ip_errors(value: str, expected: list[str]) -> None:
    assert non_special_ip_errors(value) == expected


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("10.9.8.0/24", True),
        ("10.9.8.1/24", True),  # host bits set: Go's ParseCIDR accepts it
        ("2001:db8::/64", True),
        ("0.0.0.0/0", True),
        ("10.0.0.0/33", False),
        ("2001:db8::/129", False),
        ("10.0.0.0", False),
        ("10.0.0.0/", False),
        ("10.0.0.0/255.0.0.0", False),
        ("010.0.0.0/8", False),
        ("10.0.0.0/+8", False),
    ],
)
def test_cidr_errors(value: str, ok: bool) -> None:
    assert cidr_errors(value) == ([] if ok else [CIDR_MSG])


@pytest.mark.parametrize(
    ("n", "ok"), [(1, True), (65535, True), (0, False), (65536, False), (-1, False), (True, False)]
)
def test_port_number_errors(n: int, ok: bool) -> None:
    assert port_number_errors(n) == ([] if ok else [PORT_MSG])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("http", []),
        ("h2c-8080", []),
        (
            "HTTP",
            [
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "must contain at least one letter (a-z)",
            ],
        ),
        (
            "",
            [
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "must contain at least one letter (a-z)",
            ],
        ),
    ],
)
def test_iana_port_name_errors(name: str, expected: list[str]) -> None:
    assert iana_port_name_errors(name) == expected


def test_service_predicates() -> None:
    assert is_headless(headless())
    assert not is_headless(cluster_ip())
    assert not is_headless({"spec": {"clusterIPs": "None"}})
    assert needs_health_check(load_balancer(externalTrafficPolicy="Local"))
    assert not needs_health_check(node_port(externalTrafficPolicy="Local"))
    assert externally_accessible(node_port())
    assert externally_accessible(load_balancer())
    assert externally_accessible(cluster_ip(externalIPs=["203.0.113.7"]))
    assert not externally_accessible(cluster_ip())
    assert not externally_accessible(external_name())
    assert not externally_accessible({"spec": "garbage"})
