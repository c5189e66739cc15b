"""``spindle_api_key`` end to end with the real terraform binary (issue 26, section 2 and finding 4).

- ``secret_file``: the secret is written to a file (mode 0600) when the key is created and
  never into Terraform's state or plan output.
- ``terraform import`` of a key, then ``plan`` with a matching configuration: no changes
  (before, the plan replaced the key, that is revoked it).
- ``task_queues``: a worker key confined to task queues; a change forces a new key.

Every effect is checked through Spindle's gRPC API and the state file itself.
"""

from __future__ import annotations

import json
import os
import stat

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import grpc
import pytest

from _tf_harness import Terraform, provider_block
from spindle_procs import AuthDevServer

from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc

pytestmark = pytest.mark.timeout(240)

MakeTf = Callable[..., Terraform]


@pytest.fixture
def auth_dev(tmp_path: Path) -> Iterator[Any]:
    with AuthDevServer(tmp_path / "dev.db") as srv:
        channel = grpc.insecure_channel(srv.address)
        srv.stub = service_pb2_grpc.WorkflowServiceStub(channel)
        srv.admin = (("authorization", f"Bearer {srv.key}"),)
        try:
            yield srv
        finally:
            channel.close()


def keys_named(srv: Any, name: str) -> list[Any]:
    return [k for k in srv.stub.ListApiKeys(svc.ListApiKeysRequest(), metadata=srv.admin, timeout=10).keys
            if k.name == name]


def key_config(srv: Any, body: str) -> str:
    return provider_block(srv.address, extra="  api_key = var.admin_key\n") + '''
variable "admin_key" {
  type      = string
  sensitive = true
}
''' + body


def state_text(tf: Terraform) -> str:
    return (tf.workdir / "terraform.tfstate").read_text()


def test_import_then_plan_shows_no_changes(make_tf: MakeTf, auth_dev: Any) -> None:
    srv = auth_dev
    env = {"TF_VAR_admin_key": srv.key}
    made = srv.stub.CreateApiKey(svc.CreateApiKeyRequest(
        name="imported", grants={"default": "worker"}, ttl_ms=30 * 86_400_000,
        task_queues={"default": svc.ApiKeyTaskQueues(names=["orders"])}), metadata=srv.admin, timeout=10)
    tf = make_tf("import")
    tf.write(key_config(srv, '''
resource "spindle_api_key" "k" {
  name            = "imported"
  grants          = { default = "worker" }
  task_queues     = { default = ["orders"] }
  expires_in_days = 30
}
'''))
    tf.run("init")
    tf.run("import", "spindle_api_key.k", made.key.id, extra_env=env)
    res = tf.run("plan", "-detailed-exitcode", expect=(0, 2), extra_env=env)
    assert res.rc == 0 and "No changes" in res.out, res.out
    # written out, system_admin = false means what leaving it out means: no new key (at most a no-op update)
    tf.write(key_config(srv, '''
resource "spindle_api_key" "k" {
  name            = "imported"
  grants          = { default = "worker" }
  task_queues     = { default = ["orders"] }
  system_admin    = false
  expires_in_days = 30
}
'''))
    res = tf.run("plan", "-detailed-exitcode", expect=(0, 2), extra_env=env)
    assert "must be replaced" not in res.out and "forces replacement" not in res.out, res.out
    tf.run("apply", "-auto-approve", extra_env=env)
    assert tf.run("plan", "-detailed-exitcode", expect=(0, 2), extra_env=env).rc == 0
    assert [k.id for k in keys_named(srv, "imported") if not k.revoke_time_ms] == [made.key.id]
    # a setting that does not match the key is a replacement, as for any change
    tf.write(key_config(srv, '''
resource "spindle_api_key" "k" {
  name            = "imported"
  grants          = { default = "worker" }
  expires_in_days = 30
}
'''))
    res = tf.run("plan", "-detailed-exitcode", expect=2, extra_env=env)
    assert "must be replaced" in res.out and "task_queues" in res.out, res.out
    (key,) = keys_named(srv, "imported")
    assert not key.revoke_time_ms  # plans revoke nothing


def test_secret_file_keeps_the_secret_out_of_the_state(make_tf: MakeTf, auth_dev: Any, tmp_path: Path) -> None:
    srv = auth_dev
    env = {"TF_VAR_admin_key": srv.key}
    secret_path = tmp_path / "secrets" / "worker.key"
    tf = make_tf("file")
    tf.write(key_config(srv, f'''
resource "spindle_api_key" "w" {{
  name        = "file worker"
  grants      = {{ default = "worker" }}
  task_queues = {{ default = ["orders", "billing"] }}
  secret_file = "{secret_path}"
}}
'''))
    tf.run("init")
    res = tf.run("apply", "-auto-approve", extra_env=env)
    secret = secret_path.read_text().strip()
    assert secret.startswith("spk_") and secret not in res.out
    assert stat.S_IMODE(os.stat(secret_path).st_mode) == 0o600
    assert secret not in state_text(tf)
    (resource,) = json.loads(state_text(tf))["resources"]
    attrs = resource["instances"][0]["attributes"]
    assert attrs["secret"] is None and attrs["secret_file"] == str(secret_path)
    assert attrs["task_queues"] == {"default": ["billing", "orders"]}
    (key,) = keys_named(srv, "file worker")
    assert secret.startswith(f"spk_{key.id}_")
    assert {ns: list(q.names) for ns, q in key.task_queues.items()} == {"default": ["billing", "orders"]}
    # the key works, on its own queues only
    worker = (("authorization", f"Bearer {secret}"),)
    with pytest.raises(grpc.RpcError) as e:
        srv.stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(namespace="default", task_queue="other"),
                                       metadata=worker, timeout=10)
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED and "billing, orders" in (e.value.details() or "")
    assert tf.run("plan", "-detailed-exitcode", expect=0, extra_env=env).rc == 0
    # another queue list is another key: the old one is revoked after the new one exists
    tf.write(key_config(srv, f'''
resource "spindle_api_key" "w" {{
  name        = "file worker"
  grants      = {{ default = "worker" }}
  task_queues = {{ default = ["orders"] }}
  secret_file = "{secret_path}"
}}
'''))
    res = tf.run("plan", "-detailed-exitcode", expect=2, extra_env=env)
    assert "forces replacement" in res.out
    tf.run("apply", "-auto-approve", extra_env=env)
    new_secret = secret_path.read_text().strip()
    assert new_secret != secret and new_secret not in state_text(tf)
    listed = keys_named(srv, "file worker")
    assert sorted(bool(k.revoke_time_ms) for k in listed) == [False, True]
    tf.run("destroy", "-auto-approve", extra_env=env)
    assert all(k.revoke_time_ms for k in keys_named(srv, "file worker"))


def test_bad_task_queues_and_secret_file_are_refused_at_plan(make_tf: MakeTf, auth_dev: Any) -> None:
    srv = auth_dev
    env = {"TF_VAR_admin_key": srv.key}
    tf = make_tf("bad")
    tf.write(key_config(srv, '''
resource "spindle_api_key" "w" {
  name        = "bad"
  grants      = { default = "writer" }
  task_queues = { default = ["orders"] }
  secret_file = "relative/path.key"
}
'''))
    tf.run("init")
    res = tf.run("plan", expect=1, extra_env=env)
    assert "task_queues" in res.flat and "'worker' grant" in res.flat, res.out
    assert "secret_file" in res.flat and "absolute path" in res.flat, res.out
    assert keys_named(srv, "bad") == []
