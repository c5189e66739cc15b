"""The spindle provider end to end: terraform (on PATH) against a real `spindle server start-dev`.

Every step's effect is checked through Spindle's gRPC API, not through Terraform's state.
"""

from __future__ import annotations

import json
import shutil

from pathlib import Path
from typing import Any, Callable

import pytest

from _tf_harness import (
    MS_PER_DAY,
    REPO,
    Api,
    DevServer,
    Installed,
    Terraform,
    TlsAuthProxy,
    free_port,
    provider_block,
    search_attribute_names,
    self_signed_certificate,
)

pytestmark = pytest.mark.timeout(240)

MakeTf = Callable[..., Terraform]


def orders_config(address: str, *, name: str = "tf-orders", retention: int = 7, description: str = "Orders",
                  search_attributes: str = 'CustomerId = "Keyword"\n    Amount = "Double"', extra: str = "") -> str:
    return provider_block(address) + f'''
resource "spindle_namespace" "orders" {{
  name           = "{name}"
  description    = "{description}"
  owner_email    = "ops@example.com"
  retention_days = {retention}
  search_attributes = {{
    {search_attributes}
  }}
{extra}}}
'''


def test_lifecycle(make_tf: MakeTf, spindle_server: DevServer, api: Api) -> None:
    """init, plan, apply, no-op plan, in-place change, drift, recreate, rename, import, destroy."""
    addr = spindle_server.address
    tf = make_tf()
    tf.write(orders_config(addr))

    # init installs the provider from the filesystem mirror
    res = tf.run("init")
    assert "spindle.local/spindle/spindle" in res.out and "Terraform has been successfully initialized" in res.out

    # plan: one namespace to add
    res = tf.run("plan", "-detailed-exitcode", expect=2)
    assert "spindle_namespace.orders will be created" in res.out and "1 to add, 0 to change, 0 to destroy" in res.out
    assert api.describe("tf-orders") is None, "plan must not create anything"

    # apply: created as configured
    tf.run("apply", "-auto-approve")
    info = api.describe("tf-orders")
    assert info is not None
    assert info.retention_ms == 7 * MS_PER_DAY
    assert info.description == "Orders" and info.owner_email == "ops@example.com"
    assert search_attribute_names(info) == {"CustomerId": "Keyword", "Amount": "Double"}
    assert info.rps_limit == 2400, "rps_limit unset: the server's default (namespace_rps_limit)"
    first_id = info.id

    # second plan: nothing to do
    tf.run("plan", "-detailed-exitcode", expect=0)

    # in-place change: retention, description, one more search attribute, a request rate limit
    tf.write(orders_config(addr, retention=30, description="Orders v2",
                           search_attributes='CustomerId = "Keyword"\n    Amount = "Double"\n    Region = "Keyword"',
                           extra="  rps_limit = 50\n"))
    res = tf.run("plan", "-detailed-exitcode", expect=2)
    assert "updated in-place" in res.out and "7 -> 30" in res.out and "0 to add, 1 to change, 0 to destroy" in res.out
    assert "2400 -> 50" in res.out
    tf.run("apply", "-auto-approve")
    info = api.describe("tf-orders")
    assert info.id == first_id, "an in-place change must not replace the namespace"
    assert info.retention_ms == 30 * MS_PER_DAY and info.description == "Orders v2"
    assert info.rps_limit == 50
    tf.run("plan", "-detailed-exitcode", expect=0)
    # removed from the configuration: the namespace keeps its limit (optional and computed, like retention_days)
    assert search_attribute_names(info) == {"CustomerId": "Keyword", "Amount": "Double", "Region": "Keyword"}
    tf.run("plan", "-detailed-exitcode", expect=0)

    # removing a search attribute, or changing its type, is refused at plan time
    tf.write(orders_config(addr, retention=30, description="Orders v2"))
    res = tf.run("plan", expect=1)
    assert "Search attributes cannot be removed" in res.flat and "'Region' would be removed" in res.flat
    tf.write(orders_config(addr, retention=30, description="Orders v2",
                           search_attributes='CustomerId = "Int"\n    Amount = "Double"\n    Region = "Keyword"'))
    res = tf.run("plan", expect=1)
    assert "Search attribute 'CustomerId' cannot change type" in res.flat
    assert search_attribute_names(api.describe("tf-orders"))["CustomerId"] == "Keyword"

    # out-of-band change through the Spindle API shows up in plan, and apply puts it back
    tf.write(orders_config(addr, retention=30, description="Orders v2",
                           search_attributes='CustomerId = "Keyword"\n    Amount = "Double"\n    Region = "Keyword"'))
    api.update("tf-orders", ["description", "retention"], description="changed by hand", retention_ms=3 * MS_PER_DAY)
    res = tf.run("plan", "-detailed-exitcode", expect=2)
    assert '"changed by hand" -> "Orders v2"' in res.out and "3 -> 30" in res.out
    tf.run("apply", "-auto-approve")
    info = api.describe("tf-orders")
    assert info.description == "Orders v2" and info.retention_ms == 30 * MS_PER_DAY

    # a search attribute added outside Terraform is drift too (and would have to be adopted)
    api.update("tf-orders", ["search_attributes"], search_attributes={
        "CustomerId": 1, "Amount": 4, "Region": 1, "Priority": 3})
    res = tf.run("plan", expect=1)
    assert "'Priority' would be removed" in res.flat
    tf.write(orders_config(addr, retention=30, description="Orders v2",
                           search_attributes='CustomerId = "Keyword"\n    Amount = "Double"\n    Region = "Keyword"\n'
                                             '    Priority = "Int"'))
    tf.run("plan", "-detailed-exitcode", expect=0)

    # deleted outside Terraform: plan creates it again
    api.delete("tf-orders")
    res = tf.run("plan", "-detailed-exitcode", expect=2)
    assert "will be created" in res.out
    tf.run("apply", "-auto-approve")
    assert api.describe("tf-orders") is not None

    # rename: replacement (destroy tf-orders, create tf-orders-v2)
    sa = 'CustomerId = "Keyword"\n    Amount = "Double"\n    Region = "Keyword"\n    Priority = "Int"'
    tf.write(orders_config(addr, name="tf-orders-v2", retention=30, description="Orders v2", search_attributes=sa))
    res = tf.run("plan", "-detailed-exitcode", expect=2)
    assert "must be replaced" in res.out and "forces replacement" in res.out
    assert "1 to add, 0 to change, 1 to destroy" in res.out
    tf.run("apply", "-auto-approve")
    assert api.describe("tf-orders") is None
    info = api.describe("tf-orders-v2")
    assert info is not None and info.retention_ms == 30 * MS_PER_DAY
    assert search_attribute_names(info)["Priority"] == "Int"

    # import by name: forget it, import it, and the plan is clean
    tf.run("state", "rm", "spindle_namespace.orders")
    tf.run("plan", "-detailed-exitcode", expect=2)  # would create it again (and fail: it exists)
    res = tf.run("import", "spindle_namespace.orders", "tf-orders-v2")
    assert "Import successful" in res.out
    tf.run("plan", "-detailed-exitcode", expect=0)
    res = tf.run("state", "show", "spindle_namespace.orders")
    assert info.id in res.out

    # destroy
    res = tf.run("destroy", "-auto-approve")
    assert "1 destroyed" in res.out
    assert api.describe("tf-orders-v2") is None


def test_create_refused_when_namespace_exists(make_tf: MakeTf, spindle_server: DevServer, api: Api) -> None:
    api.create("tf-taken", retention_ms=MS_PER_DAY)
    tf = make_tf()
    tf.write(provider_block(spindle_server.address) + 'resource "spindle_namespace" "x" { name = "tf-taken" }\n')
    tf.run("init")
    res = tf.run("apply", "-auto-approve", expect=1)
    assert "Namespace 'tf-taken' already exists" in res.flat and "terraform import" in res.flat
    assert api.describe("tf-taken").retention_ms == MS_PER_DAY  # untouched


def test_destroy_with_running_executions_needs_force_destroy(make_tf: MakeTf, spindle_server: DevServer,
                                                            api: Api) -> None:
    tf = make_tf()
    body = 'resource "spindle_namespace" "busy" {\n  name = "tf-busy"\n%s}\n'
    tf.write(provider_block(spindle_server.address) + body % "")
    tf.run("init")
    tf.run("apply", "-auto-approve")
    # unset retention (server default), description, search attributes: no perpetual diff
    tf.run("plan", "-detailed-exitcode", expect=0)
    assert api.describe("tf-busy").retention_ms > 0
    api.start_workflow("tf-busy", "wf-1")
    api.start_workflow("tf-busy", "wf-2")

    res = tf.run("destroy", "-auto-approve", expect=1)
    assert "Cannot delete namespace 'tf-busy': it has running executions" in res.flat
    assert "2 running execution(s)" in res.flat and "force_destroy = true" in res.flat
    assert api.describe("tf-busy") is not None, "a refused destroy must leave the namespace"

    tf.write(provider_block(spindle_server.address) + body % "  force_destroy = true\n")
    res = tf.run("apply", "-auto-approve")
    assert "0 added, 1 changed, 0 destroyed" in res.out
    tf.run("destroy", "-auto-approve")
    assert api.describe("tf-busy") is None


def test_bad_input_is_reported_at_plan_and_nothing_is_created(make_tf: MakeTf, spindle_server: DevServer,
                                                              api: Api) -> None:
    tf = make_tf()
    tf.write(provider_block(spindle_server.address) + '''
resource "spindle_namespace" "good" {
  name = "tf-good-but-not-alone"
}
resource "spindle_namespace" "bad_name" {
  name = "bad name!"
}
resource "spindle_namespace" "negative" {
  name           = "tf-negative"
  retention_days = -3
}
resource "spindle_namespace" "fraction" {
  name           = "tf-fraction"
  retention_days = 1.5
}
resource "spindle_namespace" "bad_types" {
  name = "tf-bad-types"
  search_attributes = {
    CustomerId = "Strng"
    Region     = "keyword"
    WorkflowId = "Keyword"
    "9lives"   = "Int"
  }
}
resource "spindle_namespace" "bad_misc" {
  name         = "tf-bad-misc"
  owner_email  = "not-an-email"
  archival_uri = "s3://bucket/x"
}
''')
    tf.run("init")
    before = api.names()
    res = tf.run("plan", expect=1)
    flat = res.flat
    expected = [
        ("Invalid namespace name 'bad name!'", 'name = "bad name!"'),
        ("Invalid retention_days -3", "retention_days = -3"),
        ("Invalid retention_days 1.5", "retention_days = 1.5"),
        ("Unknown search attribute type 'Strng' for 'CustomerId'", "Keyword, Text, Int, Double, Bool, Datetime"),
        ("Unknown search attribute type 'keyword' for 'Region'", "Did you mean 'Keyword'?"),
        ("Search attribute 'WorkflowId' is built in", "built-in visibility field"),
        ("Invalid search attribute name '9lives'", "does not start with a digit"),
        ("Invalid owner_email 'not-an-email'", 'owner_email = "not-an-email"'),
        ("Invalid archival_uri 's3://bucket/x'", "gs://BUCKET/PREFIX"),
    ]
    for summary, detail in expected:
        assert f"Error: {summary}" in flat, f"missing diagnostic {summary!r}:\n{res.out}"
        assert detail in flat, f"missing {detail!r}:\n{res.out}"
    # Each diagnostic points at the resource and attribute in the configuration.
    assert 'in resource "spindle_namespace" "negative"' in flat
    assert 'in resource "spindle_namespace" "bad_types"' in flat

    res = tf.run("apply", "-auto-approve", expect=1)
    assert "Invalid retention_days -3" in res.flat
    assert api.names() == before, "nothing may be created when part of the configuration is invalid"
    assert api.describe("tf-good-but-not-alone") is None


def test_unreachable_server_is_a_diagnostic_on_address(make_tf: MakeTf) -> None:
    tf = make_tf()
    port = free_port()
    tf.write(provider_block(f"127.0.0.1:{port}") + 'resource "spindle_namespace" "x" { name = "tf-nowhere" }\n')
    tf.run("init")
    res = tf.run("plan", expect=1)
    flat = res.flat
    assert f"Error: Cannot connect to Spindle at 127.0.0.1:{port}" in flat
    assert 'address = "127.0.0.1:' in flat  # the diagnostic points at the address attribute
    assert "UNAVAILABLE" in flat and "SPINDLE_ADDRESS" in flat


def test_invalid_provider_settings(make_tf: MakeTf) -> None:
    tf = make_tf()
    tf.write(provider_block("localhost", extra='  timeout_seconds = -1\n  tls_cert_file = "/nope.pem"\n')
             + 'resource "spindle_namespace" "x" { name = "tf-x" }\n')
    tf.run("init")
    res = tf.run("validate", expect=1)
    flat = res.flat
    assert "Invalid address 'localhost'" in flat and "HOST:PORT" in flat
    assert "Invalid timeout_seconds -1" in flat
    assert "tls_key_file is required with tls_cert_file" in flat


def test_example_namespaces_and_env_address(make_tf: MakeTf, spindle_server: DevServer, api: Api) -> None:
    """terraform/examples/namespaces, with the address from SPINDLE_ADDRESS; then the data sources."""
    tf = make_tf("example")
    for f in (REPO / "terraform" / "examples" / "namespaces").glob("*.tf"):
        shutil.copy(f, tf.workdir / f.name)
    env = {"SPINDLE_ADDRESS": spindle_server.address}
    tf.run("init")
    tf.run("apply", "-auto-approve", extra_env=env)
    orders, analytics, sandbox = api.describe("orders"), api.describe("analytics"), api.describe("sandbox")
    assert orders.retention_ms == 30 * MS_PER_DAY and analytics.retention_ms == 90 * MS_PER_DAY
    assert sandbox.retention_ms == 1 * MS_PER_DAY
    assert search_attribute_names(orders) == {"CustomerId": "Keyword", "OrderTotal": "Double", "Region": "Keyword"}
    assert search_attribute_names(analytics) == {"ReportDate": "Datetime", "Dataset": "Keyword", "RowCount": "Int",
                                                 "Tags": "KeywordList"}
    assert search_attribute_names(sandbox) == {}
    outputs = json.loads(tf.run("output", "-json").out)
    assert outputs["namespace_ids"]["value"]["orders"] == orders.id
    assert {"orders", "analytics", "sandbox", "default"} <= set(outputs["all_namespaces"]["value"])
    tf.run("plan", "-detailed-exitcode", expect=0, extra_env=env)

    # data sources, in a second configuration
    ds = make_tf("datasources")
    ds.write(provider_block(spindle_server.address, extra='  namespace = "orders"\n') + '''
data "spindle_namespace" "current" {}
data "spindle_namespace" "analytics" { name = "analytics" }
data "spindle_namespaces" "some" { name_prefix = "an" }
output "current" { value = data.spindle_namespace.current }
output "analytics_sa" { value = data.spindle_namespace.analytics.search_attributes }
output "some" { value = data.spindle_namespaces.some }
''')
    ds.run("init")
    ds.run("apply", "-auto-approve")
    out = json.loads(ds.run("output", "-json").out)
    current = out["current"]["value"]
    assert current["name"] == "orders" and current["retention_days"] == 30 and current["namespace_id"] == orders.id
    assert current["owner_email"] == "platform-team@example.com"
    assert out["analytics_sa"]["value"]["Tags"] == "KeywordList"
    some = out["some"]["value"]
    assert some["names"] == ["analytics"]
    assert some["namespaces"][0]["retention_days"] == 90 and some["namespaces"][0]["namespace_id"] == analytics.id

    # a data source naming a missing namespace is an error on its name
    ds.write(provider_block(spindle_server.address) + 'data "spindle_namespace" "x" { name = "tf-missing" }\n')
    res = ds.run("plan", expect=1)
    assert "Namespace 'tf-missing' not found" in res.flat

    tf.run("destroy", "-auto-approve", extra_env=env)
    assert api.describe("orders") is None and api.describe("sandbox") is None


def test_dev_overrides_config_works_without_init(make_tf: MakeTf, provider_install: Installed, spindle_server: DevServer,
                                                 api: Api) -> None:
    tf = make_tf("dev", cli_config=provider_install.dev_cli_config)
    tf.write(provider_block(spindle_server.address)
             + 'resource "spindle_namespace" "d" {\n  name = "tf-dev"\n  retention_days = 2\n}\n')
    res = tf.run("apply", "-auto-approve")
    assert "Provider development overrides are in effect" in res.out
    assert api.describe("tf-dev").retention_ms == 2 * MS_PER_DAY
    tf.run("destroy", "-auto-approve")
    assert api.describe("tf-dev") is None


def test_tls_and_api_key(make_tf: MakeTf, spindle_server: DevServer, api: Api, tmp_path: Path) -> None:
    """Through a TLS gateway that checks the API key: CA file + server name, skip-verify, and refusals."""
    pytest.importorskip("cryptography", reason="cryptography (via google-auth) makes the test certificate")
    cert, key = self_signed_certificate("spindle.test")
    (tmp_path / "ca.pem").write_bytes(cert)
    proxy = TlsAuthProxy(spindle_server.address, cert, key, api_key="s3cret")
    try:
        resource = 'resource "spindle_namespace" "t" {\n  name = "tf-tls"\n  retention_days = 4\n}\n'
        tf = make_tf("tls")
        tf.write(provider_block(proxy.address, extra=f'  tls_ca_file = "{tmp_path}/ca.pem"\n'
                                                     '  tls_server_name = "spindle.test"\n') + resource)
        tf.run("init")
        # the API key comes from the environment; the provider block has none
        env = {"SPINDLE_API_KEY": "s3cret"}
        tf.run("apply", "-auto-approve", extra_env=env)
        assert api.describe("tf-tls").retention_ms == 4 * MS_PER_DAY
        assert proxy.calls and all(auth == "Bearer s3cret" for _, auth in proxy.calls)
        assert "s3cret" not in tf.run("state", "pull").out  # the key is provider config, never state

        # a wrong key: refused at configure time, on api_key
        res = tf.run("plan", expect=1, extra_env={"SPINDLE_API_KEY": "wrong"})
        assert "refused the credentials (UNAUTHENTICATED)" in res.flat

        # no CA: the self-signed certificate is not trusted
        tf.write(provider_block(proxy.address, extra='  tls = true\n') + resource)
        res = tf.run("plan", expect=1, extra_env=env)
        assert f"Cannot connect to Spindle at {proxy.address}" in res.flat

        # skip verification: trusts the presented certificate and its name
        tf.write(provider_block(proxy.address, extra='  tls_insecure_skip_verify = true\n') + resource)
        tf.run("plan", "-detailed-exitcode", expect=0, extra_env=env)
        tf.run("destroy", "-auto-approve", extra_env=env)
        assert api.describe("tf-tls") is None
    finally:
        proxy.stop()


# ---------------------------------------------------------------------- API keys on the server

class AuthServer:
    """``spindle server start --config`` with ``auth: {mode: api_keys}``; the bootstrap admin key comes from a file."""

    def __init__(self, tmp: Path) -> None:
        import os
        import re
        import subprocess

        from _tf_harness import SPINDLE
        from spindle_procs import read_line

        self.key_file = tmp / "admin-key"
        cfg = tmp / "spindle.yaml"
        cfg.write_text(f"store: {{sqlite: {{path: '{tmp / 'auth.db'}'}}}}\nnum_shards: 2\nlisten: '127.0.0.1:0'\n"
                       "metrics: {listen: '127.0.0.1:0'}\n"
                       f"auth: {{mode: api_keys, bootstrap_admin_key_file: '{self.key_file}'}}\n")
        self.log = open(tmp / "server.log", "w")
        self.proc = subprocess.Popen([SPINDLE, "server", "start", "--config", str(cfg)], stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        m = read_line(self.proc, re.compile(r"listening on [0-9.]+:(\d+)"), 60)
        assert m is not None, (tmp / "server.log").read_text()
        self.address = f"127.0.0.1:{m.group(1)}"
        self.admin_key = self.key_file.read_text().strip()

    def stub(self) -> Any:
        import grpc

        from spindle.api import service_pb2_grpc

        self.channel = grpc.insecure_channel(self.address)
        return service_pb2_grpc.WorkflowServiceStub(self.channel)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)
        self.log.close()


@pytest.fixture
def auth_server(tmp_path: Path) -> Any:
    server = AuthServer(tmp_path)
    try:
        yield server
    finally:
        server.stop()


def team_config(address: str, *, role: str = "worker", extra_provider: str = "") -> str:
    return provider_block(address, extra=extra_provider) + f'''
variable "admin_key" {{
  type      = string
  sensitive = true
  default   = null
}}

resource "spindle_namespace" "team" {{
  name           = "tf-team"
  retention_days = 3
}}

resource "spindle_api_key" "team_worker" {{
  name            = "team worker"
  grants          = {{ (spindle_namespace.team.name) = "{role}" }}
  expires_in_days = 30
}}

output "worker_key" {{
  value     = spindle_api_key.team_worker.secret
  sensitive = true
}}
'''


def test_with_api_keys_on_the_provider_creates_a_namespace_and_an_api_key(make_tf: MakeTf, auth_server: Any) -> None:
    """Auth on: an admin key (provider api_key) creates a namespace and a worker key; the key works as granted."""
    import grpc

    from spindle.api import service_pb2 as svc

    srv = auth_server
    stub = srv.stub()
    admin = (("authorization", f"Bearer {srv.admin_key}"),)
    tf = make_tf("auth")
    tf.write(team_config(srv.address, extra_provider="  api_key = var.admin_key\n"))
    tf.run("init")

    # without a key, or with a wrong one: refused when the provider connects, on api_key
    for env in ({}, {"TF_VAR_admin_key": "spk_0123456789abcdef_" + "A" * 43}):
        res = tf.run("plan", expect=1, extra_env=env)
        assert "refused the credentials (UNAUTHENTICATED)" in res.flat and "api_key" in res.flat, res.out
    assert not [k for k in stub.ListApiKeys(svc.ListApiKeysRequest(), metadata=admin, timeout=10).keys
                if k.name == "team worker"]
    assert "tf-team" not in [n.name for n in stub.ListNamespaces(svc.ListNamespacesRequest(), metadata=admin,
                                                                  timeout=10).namespaces]

    env = {"TF_VAR_admin_key": srv.admin_key}
    tf.run("apply", "-auto-approve", extra_env=env)
    info = stub.DescribeNamespace(svc.DescribeNamespaceRequest(name="tf-team"), metadata=admin, timeout=10)
    assert info.namespace_info.retention_ms == 3 * MS_PER_DAY
    keys = [k for k in stub.ListApiKeys(svc.ListApiKeysRequest(), metadata=admin, timeout=10).keys
            if k.name == "team worker"]
    assert len(keys) == 1 and dict(keys[0].grants) == {"tf-team": "worker"} and not keys[0].revoke_time_ms
    assert keys[0].expire_time_ms - keys[0].create_time_ms == 30 * MS_PER_DAY
    first_id = keys[0].id

    # the secret Terraform holds is the key's: it may read and poll tf-team, not start runs, not touch others
    secret = tf.run("output", "-raw", "worker_key", extra_env=env).out.strip()
    assert secret.startswith(f"spk_{first_id}_")
    worker = (("authorization", f"Bearer {secret}"),)
    stub.DescribeNamespace(svc.DescribeNamespaceRequest(name="tf-team"), metadata=worker, timeout=10)
    with pytest.raises(grpc.RpcError) as e:
        stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace="tf-team", workflow_id="w", workflow_type="W", task_queue="q", request_id="r"),
            metadata=worker, timeout=10)
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as e:
        stub.DescribeNamespace(svc.DescribeNamespaceRequest(name="default"), metadata=worker, timeout=10)
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # the secret is in the state only as a sensitive value, and never in plan output
    res = tf.run("plan", "-detailed-exitcode", expect=0, extra_env=env)
    assert secret not in res.out

    # a new role is a new key: the old one is revoked
    tf.write(team_config(srv.address, role="writer", extra_provider="  api_key = var.admin_key\n"))
    res = tf.run("plan", "-detailed-exitcode", expect=2, extra_env=env)
    assert "must be replaced" in res.out and "forces replacement" in res.out
    tf.run("apply", "-auto-approve", extra_env=env)
    listed = {k.id: k for k in stub.ListApiKeys(svc.ListApiKeysRequest(), metadata=admin, timeout=10).keys}
    assert listed[first_id].revoke_time_ms
    (new,) = [k for k in listed.values() if k.name == "team worker" and not k.revoke_time_ms]
    assert dict(new.grants) == {"tf-team": "writer"}
    with pytest.raises(grpc.RpcError) as e:
        stub.DescribeNamespace(svc.DescribeNamespaceRequest(name="tf-team"), metadata=worker, timeout=10)
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED  # the old secret stopped working

    # revoked outside Terraform: the next plan makes a new key
    stub.RevokeApiKey(svc.RevokeApiKeyRequest(id=new.id), metadata=admin, timeout=10)
    res = tf.run("plan", "-detailed-exitcode", expect=2, extra_env=env)
    assert "spindle_api_key.team_worker will be created" in res.out

    # bad input is refused at plan time and creates nothing
    tf.write(team_config(srv.address, role="owner", extra_provider="  api_key = var.admin_key\n"))
    res = tf.run("plan", expect=1, extra_env=env)
    assert "Unknown role 'owner'" in res.flat

    tf.write(team_config(srv.address, extra_provider="  api_key = var.admin_key\n"))
    tf.run("destroy", "-auto-approve", extra_env=env)
    assert all(k.revoke_time_ms for k in stub.ListApiKeys(svc.ListApiKeysRequest(), metadata=admin, timeout=10).keys
               if k.name == "team worker")
    with pytest.raises(grpc.RpcError) as e:
        stub.DescribeNamespace(svc.DescribeNamespaceRequest(name="tf-team"), metadata=admin, timeout=10)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
