"""The kubelet's `/metrics/resource` format (written by the node agent, read back by the metrics server), the usage
annotations of simulated pods, and the node's CPU counter."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tinykube.api.resource_metrics import (
    CPU_USAGE_ANNOTATION,
    ContainerUsage,
    NodeCpu,
    annotated_usage,
    parse,
    render,
)


def test_a_rendered_scrape_reads_back() -> None:
    pods = {("ns", "web-0"): {"nginx": ContainerUsage(1.5, 64 << 20, 1700000000.0, 1700000010.25)}}
    text = render(pods, 7.5, 64 << 20, 1700000010.5).decode()
    assert 'container_cpu_usage_seconds_total{container="nginx",namespace="ns",pod="web-0"} 1.5 1700000010250' in text
    assert "node_memory_working_set_bytes 67108864 1700000010500" in text
    assert text.endswith("resource_scrape_error 0\n")
    sample = parse(text)
    assert sample.containers == {
        ("ns", "web-0", "nginx"): {"cpu": 1.5, "memory": 64 << 20, "started": 1700000000.0, "at": 1700000010.25}
    }
    assert sample.node == {"cpu": 7.5, "cpu_at": 1700000010.5, "memory": 64 << 20, "memory_at": 1700000010.5}


label_text = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=20)


@given(namespace=label_text, pod=label_text, container=label_text, cpu=st.floats(0, 1e9))
def test_any_names_survive_the_round_trip(namespace: str, pod: str, container: str, cpu: float) -> None:
    pods = {(namespace, pod): {container: ContainerUsage(cpu, 1, 2.0, 3.0)}}
    assert parse(render(pods, 0.0, 0, 3.0).decode()).containers[(namespace, pod, container)]["cpu"] == cpu


def test_lines_that_are_not_resource_metrics_are_skipped() -> None:
    text = 'garbage\nnode_cpu_usage_seconds_total NaN 1\ncontainer_cpu_usage_seconds_total{pod="p"} 1 1\n'
    sample = parse(text)
    assert sample.containers == {} and sample.node == {}


def test_a_bare_annotation_is_the_first_containers_and_pairs_name_each() -> None:
    assert annotated_usage({CPU_USAGE_ANNOTATION: "250m"}, CPU_USAGE_ANNOTATION, ["app", "side"]) == {"app": 0.25}
    both = annotated_usage({CPU_USAGE_ANNOTATION: "app=1, side=100m"}, CPU_USAGE_ANNOTATION, ["app", "side"])
    assert both == {"app": 1.0, "side": 0.1}
    assert annotated_usage({CPU_USAGE_ANNOTATION: "lots"}, CPU_USAGE_ANNOTATION, ["app"]) == {}
    assert annotated_usage({}, CPU_USAGE_ANNOTATION, ["app"]) == {}


def test_the_node_counter_only_grows_as_containers_come_and_go() -> None:
    node = NodeCpu()
    usage = {("ns", "a"): {"c": ContainerUsage(2.0, 0, 10.0, 20.0)}}
    assert node.advance(usage) == 2.0
    assert node.advance({("ns", "a"): {"c": ContainerUsage(3.0, 0, 10.0, 21.0)}}) == 3.0
    assert node.advance({}) == 3.0  # the pod went: what it used stays counted
    restarted = {("ns", "a"): {"c": ContainerUsage(0.5, 0, 30.0, 31.0)}}  # a new run counts from zero
    assert node.advance(restarted) == 3.5
