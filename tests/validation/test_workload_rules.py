"""Services and pod controllers as kube-apiserver v1.37.2 words them (``kubectl create
--dry-run=server``): a Service's name is a DNS-1123 label (RelaxedServiceNameValidation, GA),
a new StatefulSet's service name a DNS label, a ReplicationController's name a long name
(its length in bytes); selectors and label maps print as JSON."""

from __future__ import annotations

from typing import Any

import pytest

from multisched.validation import Document, object_problems

TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}
MISMATCH = "`selector` does not match template `labels`"


def problems(obj: dict[str, Any]) -> list[str]:
    return object_problems(Document("w.yaml", "document 1", obj))


def service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }


def apps(kind: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE, **spec},
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("1web", []),  # a DNS-1035 label no more
        ("web.v1", ['metadata.name: Invalid value: "web.v1": must not contain dots']),
        (
            "Web",
            [
                'metadata.name: Invalid value: "Web": a lowercase RFC 1123 label must consist of '
                "lower case alphanumeric characters or '-', and must start and end with an "
                "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ],
        ),
        (
            "a" * 64,
            [f'metadata.name: Invalid value: "{"a" * 64}": must be no more than 63 characters'],
        ),
    ],
)
def test_service_names(name: str, expected: list[str]) -> None:
    assert problems(service(name)) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (
            # An empty selector selects everything: the template is not compared.
            {},
            ["spec.selector: Invalid value: {}: empty selector is invalid for deployment"],
        ),
        (
            {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
            [
                "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when "
                "`operator` is 'Exists' or 'DoesNotExist'",
                'spec.selector: Invalid value: {"matchExpressions":[{"key":"app","operator":'
                '"Exists","values":["x"]}]}: invalid label selector',
            ],
        ),
        (
            {"matchLabels": {"b": "2", "app": "web"}},
            [f'spec.template.metadata.labels: Invalid value: {{"app":"web"}}: {MISMATCH}'],
        ),
    ],
)
def test_replica_set_selectors(selector: dict[str, Any], expected: list[str]) -> None:
    assert problems(apps("ReplicaSet", selector=selector)) == expected


def test_a_stateful_set_says_invalid_selectors_without_words() -> None:
    bad = {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}
    assert problems(apps("StatefulSet", selector=bad)) == [
        'spec.selector.matchExpressions[0].operator: Invalid value: "Bogus": not a valid '
        "selector operator",
        'spec.selector: Invalid value: {"matchExpressions":[{"key":"app","operator":"Bogus"}]}',
    ]


def test_a_new_stateful_set_service_name_is_a_dns_label() -> None:
    [line] = problems(apps("StatefulSet", serviceName="Web"))
    assert line.startswith('spec.serviceName: Invalid value: "Web": a lowercase RFC 1123 label')
    assert problems(apps("StatefulSet", serviceName="web")) == []


def controller(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "template": TEMPLATE, **spec},
    }


def test_replication_controller_names_are_long_names() -> None:
    """``validate.LongName``: content's subdomain check, its length said in bytes."""
    long = "a" * 254
    assert problems(controller(long)) == [
        f'metadata.name: Invalid value: "{long}": must be no more than 253 bytes'
    ]


@pytest.mark.parametrize(
    ("labels", "shown"),
    [(None, "null"), ({}, "{}"), ({"tier": "x", "app": "db"}, '{"app":"db","tier":"x"}')],
)
def test_template_labels_print_as_json(labels: dict[str, str] | None, shown: str) -> None:
    template: dict[str, Any] = {"spec": TEMPLATE["spec"], "metadata": {}}
    if labels is not None:
        template["metadata"]["labels"] = labels
    assert problems(controller(template=template)) == [
        f"spec.template.metadata.labels: Invalid value: {shown}: {MISMATCH}"
    ]
