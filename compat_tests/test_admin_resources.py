"""Admin REST: clusters, tenants, namespaces and namespace policies, with Pulsar's JSON and codes."""

from __future__ import annotations

import uuid

import pytest

from compat_tests.admin_http import AdminHttp, reason


@pytest.fixture(scope="module")
def http(broker) -> AdminHttp:
    return AdminHttp(broker.web_url)


def new_tenant(http: AdminHttp, roles=("admin",)) -> str:
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    response = http.put(f"/admin/v2/tenants/{tenant}", json={"adminRoles": list(roles), "allowedClusters": ["standalone"]})
    assert response.status_code == 204, response.text
    return tenant


def new_namespace(http: AdminHttp) -> str:
    namespace = f"{new_tenant(http)}/ns"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    return namespace


def test_standalone_starts_with_its_cluster_public_tenant_and_default_namespace(http, broker):
    assert http.get("/admin/v2/clusters").json() == ["standalone"]
    cluster = http.get("/admin/v2/clusters/standalone").json()
    assert cluster["brokerServiceUrl"] == broker.service_url
    assert cluster["serviceUrl"] == broker.web_url
    assert "public" in http.get("/admin/v2/tenants").json()
    assert http.get("/admin/v2/tenants/public").json() == {"adminRoles": [], "allowedClusters": ["standalone"]}
    assert http.get("/admin/v2/namespaces/public").json() == ["public/default"]


def test_cluster_errors(http):
    assert http.get("/admin/v2/clusters/nowhere").status_code == 404
    assert reason(http.get("/admin/v2/clusters/nowhere")) == "Cluster does not exist"
    assert http.put("/admin/v2/clusters/standalone", json={}).status_code == 409
    assert http.delete("/admin/v2/clusters/standalone").status_code == 412
    assert http.put("/admin/v2/clusters/other", json={"serviceUrl": "http://x:8080"}).status_code == 204
    assert http.get("/admin/v2/clusters").json() == ["other", "standalone"]
    assert http.delete("/admin/v2/clusters/other").status_code == 204
    assert http.get("/admin/v2/clusters").json() == ["standalone"]


def test_tenant_lifecycle(http):
    tenant = new_tenant(http, roles=("b", "a"))
    assert http.get(f"/admin/v2/tenants/{tenant}").json() == {"adminRoles": ["a", "b"], "allowedClusters": ["standalone"]}
    assert tenant in http.get("/admin/v2/tenants").json()
    assert http.post(f"/admin/v2/tenants/{tenant}", json={"adminRoles": ["c"], "allowedClusters": []}).status_code == 204
    assert http.get(f"/admin/v2/tenants/{tenant}").json() == {"adminRoles": ["c"], "allowedClusters": []}
    assert http.delete(f"/admin/v2/tenants/{tenant}").status_code == 204
    assert http.get(f"/admin/v2/tenants/{tenant}").status_code == 404
    assert tenant not in http.get("/admin/v2/tenants").json()


@pytest.mark.parametrize("method, path, body, status, why", [
    ("PUT", "/admin/v2/tenants/public", {"allowedClusters": ["standalone"]}, 409, "Tenant already exists"),
    ("PUT", "/admin/v2/tenants/bad%20name", {}, 412, "Tenant name is not valid"),
    ("PUT", "/admin/v2/tenants/t-unknown-cluster", {"allowedClusters": ["mars"]}, 412, "Clusters do not exist"),
    ("PUT", "/admin/v2/tenants/t-bad-roles", {"adminRoles": "root"}, 400, None),
    ("GET", "/admin/v2/tenants/missing", None, 404, "Tenant does not exist"),
    ("POST", "/admin/v2/tenants/missing", {}, 404, "Tenant does not exist"),
    ("DELETE", "/admin/v2/tenants/public", None, 409, "The tenant still has active namespaces"),
])
def test_tenant_errors(http, method, path, body, status, why):
    response = http.request(method, path, json=body)
    assert response.status_code == status, response.text
    if why is not None:
        assert reason(response) == why


def test_malformed_json_wrong_method_and_unknown_path_answer_with_a_reason(http):
    response = http.put("/admin/v2/tenants/t-malformed", data=b"{not json")
    assert response.status_code == 400 and reason(response).startswith("Malformed JSON body")
    assert http.get("/admin/v2/tenants/t-malformed").status_code == 404
    response = http.request("PATCH", "/admin/v2/tenants/public")
    assert response.status_code == 405 and reason(response)
    response = http.get("/admin/v2/no-such-resource")
    assert response.status_code == 404 and reason(response)


def test_namespace_lifecycle(http):
    tenant = new_tenant(http)
    assert http.get(f"/admin/v2/namespaces/{tenant}").json() == []
    assert http.put(f"/admin/v2/namespaces/{tenant}/ns1").status_code == 204
    assert http.put(f"/admin/v2/namespaces/{tenant}/ns2", json={"message_ttl_in_seconds": 7}).status_code == 204
    assert http.get(f"/admin/v2/namespaces/{tenant}").json() == [f"{tenant}/ns1", f"{tenant}/ns2"]
    policies = http.get(f"/admin/v2/namespaces/{tenant}/ns2").json()
    assert policies["message_ttl_in_seconds"] == 7
    assert policies["replication_clusters"] == ["standalone"]
    assert http.put(f"/admin/v2/namespaces/{tenant}/ns1").status_code == 409
    assert reason(http.put(f"/admin/v2/namespaces/{tenant}/ns1")) == "Namespace already exists"
    assert http.delete(f"/admin/v2/tenants/{tenant}").status_code == 409
    assert http.delete(f"/admin/v2/namespaces/{tenant}/ns1").status_code == 204
    assert http.delete(f"/admin/v2/namespaces/{tenant}/ns2").status_code == 204
    assert http.get(f"/admin/v2/namespaces/{tenant}/ns1").status_code == 404
    assert http.delete(f"/admin/v2/tenants/{tenant}").status_code == 204


def test_namespace_errors(http):
    assert reason(http.put("/admin/v2/namespaces/missing-tenant/ns")) == "Tenant does not exist"
    assert http.put("/admin/v2/namespaces/public/bad%20ns").status_code == 412
    assert reason(http.get("/admin/v2/namespaces/public/missing")) == "Namespace does not exist"
    assert http.get("/admin/v2/namespaces/missing-tenant").status_code == 404
    assert http.put("/admin/v2/namespaces/public/ns-bad-body", json=[1, 2]).status_code == 400


def test_non_empty_namespace_is_deleted_only_with_force(http):
    namespace = new_namespace(http)
    assert http.put(f"/admin/v2/persistent/{namespace}/t1").status_code == 204
    assert http.put(f"/admin/v2/persistent/{namespace}/p/partitions", json=2).status_code == 204
    response = http.delete(f"/admin/v2/namespaces/{namespace}")
    assert response.status_code == 409 and reason(response) == "Cannot delete non empty namespace"
    assert http.delete(f"/admin/v2/namespaces/{namespace}", force="true").status_code == 204
    assert http.put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    assert http.get(f"/admin/v2/namespaces/{namespace}/topics", mode="ALL").json() == []
    assert http.get(f"/admin/v2/persistent/{namespace}/partitioned").json() == []


SCALAR_POLICIES = [
    # (path, value, Policies field, method that sets it)
    ("retention", {"retentionTimeInMinutes": 60, "retentionSizeInMB": 512}, "retention_policies", "POST"),
    ("messageTTL", 120, "message_ttl_in_seconds", "POST"),
    ("deduplication", True, "deduplicationEnabled", "POST"),
    ("maxProducersPerTopic", 3, "max_producers_per_topic", "POST"),
    ("maxConsumersPerTopic", 4, "max_consumers_per_topic", "POST"),
    ("schemaCompatibilityStrategy", "FULL", "schema_compatibility_strategy", "PUT"),
]


@pytest.mark.parametrize("path, value, field, method", SCALAR_POLICIES)
def test_scalar_policy_set_get_remove(http, path, value, field, method):
    namespace = new_namespace(http)
    url = f"/admin/v2/namespaces/{namespace}/{path}"
    unset = http.get(url)
    assert unset.status_code in (200, 204)
    assert http.request(method, url, json=value).status_code == 204
    assert http.get(url).json() == value
    assert http.get(f"/admin/v2/namespaces/{namespace}").json()[field] == value
    assert http.delete(url).status_code == 204
    assert field not in http.get(f"/admin/v2/namespaces/{namespace}").json()


@pytest.mark.parametrize("path, body, status", [
    ("messageTTL", -1, 412),
    ("messageTTL", "ten", 400),
    ("retention", {"retentionTimeInMinutes": "x"}, 400),
    ("retention", {"retentionTimeInMinutes": -5, "retentionSizeInMB": 1}, 412),
    ("deduplication", "yes", 400),
    ("maxProducersPerTopic", -2, 412),
])
def test_invalid_policy_values_are_refused(http, path, body, status):
    namespace = new_namespace(http)
    response = http.post(f"/admin/v2/namespaces/{namespace}/{path}", json=body)
    assert response.status_code == status, response.text
    assert reason(response)
    assert http.get(f"/admin/v2/namespaces/{namespace}").json().keys() == {
        "auth_policies", "backlog_quota_map", "replication_clusters"}


def test_policy_of_unknown_namespace_is_404(http):
    assert http.post("/admin/v2/namespaces/public/missing/messageTTL", json=5).status_code == 404
    assert http.put("/admin/v2/namespaces/public/default/schemaCompatibilityStrategy", json="SIDEWAYS").status_code == 400


def test_backlog_quotas(http):
    namespace = new_namespace(http)
    base = f"/admin/v2/namespaces/{namespace}"
    assert http.get(base + "/backlogQuotaMap").json() == {}
    quota = {"limitSize": 1048576, "limitTime": -1, "policy": "producer_request_hold"}
    assert http.post(base + "/backlogQuota", json=quota).status_code == 204
    age = {"limitSize": -1, "limitTime": 3600, "policy": "consumer_backlog_eviction"}
    response = http.request("POST", base + "/backlogQuota", json=age, backlogQuotaType="message_age")
    assert response.status_code == 204
    assert http.get(base + "/backlogQuotaMap").json() == {"destination_storage": quota, "message_age": age}
    assert http.get(base).json()["backlog_quota_map"]["destination_storage"] == quota
    assert http.post(base + "/backlogQuota", json={"limitSize": 1, "policy": "drop_everything"}).status_code == 400
    assert http.request("POST", base + "/backlogQuota", json=quota, backlogQuotaType="nope").status_code == 400
    assert http.delete(base + "/backlogQuota", backlogQuotaType="message_age").status_code == 204
    assert http.get(base + "/backlogQuotaMap").json() == {"destination_storage": quota}


def test_permissions(http):
    namespace = new_namespace(http)
    base = f"/admin/v2/namespaces/{namespace}/permissions"
    assert http.get(base).json() == {}
    assert http.post(base + "/app", json=["produce", "consume"]).status_code == 204
    assert http.post(base + "/reader", json=["consume"]).status_code == 204
    assert http.get(base).json() == {"app": ["consume", "produce"], "reader": ["consume"]}
    assert http.post(base + "/bad", json=["fly"]).status_code == 400
    assert http.delete(base + "/app").status_code == 204
    assert http.get(base).json() == {"reader": ["consume"]}
