"""Unit tests of the provider's pure parts (validation, model) and of the installer.

``spindle_tf.validation`` and ``spindle_tf.model`` import neither ``tf`` nor protobuf,
so they run here, in the project's environment, next to the control plane whose
rules they mirror. The parts that need ``tf`` run inside the provider's own
environment (last tests).
"""

from __future__ import annotations

import os
import subprocess
import sys

from pathlib import Path
from types import SimpleNamespace

import pytest

from _tf_harness import REPO, Installed

from spindle.api import service_pb2 as svc
from spindle.cli._terraform_install import (
    PROVIDER_SOURCE,
    dev_cli_config,
    launcher_text,
    mirror_cli_config,
    terraform_platform,
)
from spindle.controlplane import namespaces as cp_ns

sys.path.insert(0, str(REPO / "terraform" / "provider"))

import spindle_tf  # noqa: E402

from spindle_tf import model, validation  # noqa: E402

# ---------------------------------------------------------------- the provider agrees with the server

def test_rules_match_the_control_plane() -> None:
    """The provider's rules are a copy of the server's (tests/packaging/test_generated_copies.py: the copy is
    current); the server's names for them are the shared ones."""
    from spindle.controlplane import _resource_rules as cp_rules
    from spindle.controlplane._field_rules import MAX_DURATION_MS
    from spindle.controlplane.auth._key_admin import MAX_NAME
    from spindle.controlplane.auth._roles import ROLE_NAMES
    from spindle_tf import _resource_rules as tf_rules

    assert (cp_ns.NAME_RE, cp_ns.SA_NAME_RE, cp_ns.BUILTIN_FIELDS) == (
        cp_rules.NAMESPACE_NAME_RE, cp_rules.SEARCH_ATTRIBUTE_NAME_RE, cp_rules.BUILTIN_SEARCH_ATTRIBUTES)
    assert tf_rules.ROLES == cp_rules.ROLES == ROLE_NAMES  # the server's Role enum spells the same roles
    assert tf_rules.API_KEY_NAME_MAX_LENGTH == MAX_NAME
    assert validation.MAX_RETENTION_DAYS * tf_rules.MS_PER_DAY == MAX_DURATION_MS  # a retention is a duration
    assert validation.NAME_RE.pattern == cp_ns.NAME_RE.pattern
    assert validation.SEARCH_ATTRIBUTE_NAME_RE.pattern == cp_ns.SA_NAME_RE.pattern
    assert validation.BUILTIN_SEARCH_ATTRIBUTES == cp_ns.BUILTIN_FIELDS
    assert model.TYPE_NAME_BY_ENUM == cp_ns.SA_TYPE_NAMES
    for value, name in model.TYPE_NAME_BY_ENUM.items():
        assert svc.SearchAttributeType.Name(value) == "SEARCH_ATTRIBUTE_TYPE_" + {
            "KeywordList": "KEYWORD_LIST"}.get(name, name.upper())
    assert spindle_tf.PROVIDER_SOURCE == PROVIDER_SOURCE


@pytest.mark.parametrize("name", ["orders", "a", "A.b_c-d", "9lives", "x" * 64])
def test_valid_names_pass_both(name: str) -> None:
    problems = validation.Problems()
    validation.check_name(name, problems)
    assert not problems
    cp_ns.validate_name(name)


@pytest.mark.parametrize("name", ["", "bad name", "-x", ".x", "x" * 65, "é"])
def test_invalid_names_fail_both(name: str) -> None:
    problems = validation.Problems()
    validation.check_name(name, problems)
    assert problems and problems.items[0].path == ["name"]
    with pytest.raises(Exception):  # noqa: B017 - the server refuses it; the test compares with the provider
        cp_ns.validate_name(name)


# ---------------------------------------------------------------- validation

def _errors(config: dict[str, object]) -> list[tuple[list[object], str]]:
    return [(p.path, p.summary) for p in validation.check_namespace_config(config).items]


def test_namespace_config_ok() -> None:
    assert _errors({"name": "orders", "retention_days": 30, "search_attributes": {"CustomerId": "Keyword"},
                    "owner_email": "a@b.c", "archival_uri": "gs://bucket/prefix", "description": None}) == []


@pytest.mark.parametrize("rps", [-1, float("inf"), float("nan"), True, "5"])
def test_bad_rps_limit(rps: object) -> None:
    assert _errors({"name": "x", "rps_limit": rps}) == [(["rps_limit"], f"Invalid rps_limit {rps!r}")]


def test_rps_limit_ok() -> None:
    assert _errors({"name": "x", "rps_limit": 0}) == [] and _errors({"name": "x", "rps_limit": 2.5}) == []


@pytest.mark.parametrize("days", [0, -1, 1.5, True, "7", 100_001])
def test_bad_retention(days: object) -> None:
    assert _errors({"name": "x", "retention_days": days}) == [(["retention_days"], f"Invalid retention_days {days!r}")]


def test_search_attribute_problems_point_at_the_map_key() -> None:
    errs = _errors({"name": "x", "search_attributes": {"A": "Strng", "B": "int", "RunId": "Keyword", "1x": "Int"}})
    assert (["search_attributes", ("A",)], "Unknown search attribute type 'Strng' for 'A'") in errs
    assert (["search_attributes", ("B",)], "Unknown search attribute type 'int' for 'B'") in errs
    assert (["search_attributes", ("RunId",)], "Search attribute 'RunId' is built in") in errs
    assert (["search_attributes", ("1x",)], "Invalid search attribute name '1x'") in errs
    assert validation.suggest_type("keyword_list") == "KeywordList"
    assert validation.suggest_type("Strng") is None


def test_unknown_values_are_skipped() -> None:
    unknown = object()
    problems = validation.check_namespace_config(
        {"name": unknown, "retention_days": unknown, "search_attributes": {"A": unknown}},
        is_unknown=lambda v: v is unknown)
    assert problems.items == []


def test_search_attribute_changes() -> None:
    problems = validation.Problems()
    validation.check_search_attribute_changes({"A": "Keyword", "B": "Int"}, {"A": "Text", "C": "Bool"}, problems)
    summaries = [p.summary for p in problems.items]
    assert summaries == ["Search attributes cannot be removed", "Search attribute 'A' cannot change type"]
    ok = validation.Problems()
    validation.check_search_attribute_changes({"A": "Keyword"}, {"A": "Keyword", "B": "Int"}, ok)
    assert not ok


@pytest.mark.parametrize("address,ok", [("127.0.0.1:7233", True), ("spindle.example.com:443", True),
                                        ("[::1]:7233", True), ("localhost", False), ("h:0", False),
                                        ("h:70000", False), ("http://h:1", False)])
def test_addresses(address: str, ok: bool) -> None:
    problems = validation.Problems()
    validation.check_address(address, problems)
    assert (not problems) == ok


def test_provider_config_pairs_and_conflicts() -> None:
    errs = [p.summary for p in validation.check_provider_config(
        {"tls_key_file": "k.pem", "tls_insecure_skip_verify": True, "tls_ca_file": "ca.pem"}).items]
    assert "tls_cert_file is required with tls_key_file" in errs
    assert "tls_insecure_skip_verify conflicts with tls_ca_file" in errs


# ---------------------------------------------------------------- model

def _info(**kw: object) -> SimpleNamespace:
    base = dict(name="n", id="id1", description="", owner_email="", retention_ms=3 * model.MS_PER_DAY,
                search_attributes={}, archival_uri="", rps_limit=0.0)
    base.update(kw)
    return SimpleNamespace(**base)


def test_state_keeps_unset_optionals_null() -> None:
    st = model.namespace_state(_info(), {"description": None, "search_attributes": None})
    assert st["description"] is None and st["search_attributes"] is None and st["retention_days"] == 3
    st = model.namespace_state(_info(), {"description": "", "search_attributes": {}})
    assert st["description"] == "" and st["search_attributes"] == {}
    st = model.namespace_state(_info(description="hand-made", search_attributes={"A": 1}), {"description": None})
    assert st["description"] == "hand-made" and st["search_attributes"] == {"A": "Keyword"}


def test_retention_conversions() -> None:
    assert model.retention_days_from_ms(7 * model.MS_PER_DAY) == 7
    assert model.retention_days_from_ms(model.MS_PER_DAY // 2) == 0.5  # set outside Terraform: visible as drift
    assert model.retention_ms_from_days(30) == 30 * model.MS_PER_DAY


def test_update_mask() -> None:
    cur = {"description": "a", "owner_email": None, "retention_days": 7, "search_attributes": {"A": "Int"},
           "archival_uri": None}
    assert model.update_mask(cur, dict(cur)) == []
    assert model.update_mask(cur, {**cur, "owner_email": ""}) == []  # null and "" are the same on the server
    new = {**cur, "description": None, "retention_days": 8, "search_attributes": {"A": "Int", "B": "Bool"}}
    assert model.update_mask(cur, new) == ["description", "retention", "search_attributes"]
    assert model.update_mask({**cur, "rps_limit": 2400}, {**cur, "rps_limit": 50}) == ["rps_limit"]
    assert model.update_mask({**cur, "rps_limit": 2400}, {**cur, "rps_limit": None}) == []  # unset keeps it


def test_state_shows_rps_limit() -> None:
    assert model.namespace_state(_info(rps_limit=2400.0))["rps_limit"] == 2400
    assert model.namespace_state(_info(rps_limit=2.5))["rps_limit"] == 2.5


# ---------------------------------------------------------------- installer pieces

def test_launcher_and_cli_configs(tmp_path: Path) -> None:
    text = launcher_text(tmp_path / "venv with space", tmp_path / "lib", tmp_path / "gen")
    assert text.startswith("#!/bin/sh\n") and "PYTHONSAFEPATH=1" in text
    assert f"'{tmp_path}/venv with space/bin/python' -m spindle_tf \"$@\"" in text
    mirror = mirror_cli_config(tmp_path / "mirror")
    assert f'path    = "{tmp_path}/mirror"' in mirror and 'exclude = ["spindle.local/*/*"]' in mirror
    dev = dev_cli_config(tmp_path / "bin")
    assert f'"{PROVIDER_SOURCE}" = "{tmp_path}/bin"' in dev
    assert terraform_platform() in {"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"}


def test_install_provider_command_prints_what_it_wrote(provider_install: Installed) -> None:
    out = provider_install.stdout
    d = provider_install.dir
    for rel in ("bin/terraform-provider-spindle", "terraformrc", "dev.tfrc", "gen/spindle/api/service_pb2.py",
                "lib/spindle_tf/provider.py",
                f"mirror/spindle.local/spindle/spindle/0.1.0/{terraform_platform()}/terraform-provider-spindle_v0.1.0"):
        assert f"wrote {d / rel}\n" in out, rel
        assert (d / rel).is_file()
    assert f"export TF_CLI_CONFIG_FILE={d / 'terraformrc'}" in out
    assert os.access(d / "bin" / "terraform-provider-spindle", os.X_OK)
    assert "Protobuf Python Version: 5." in (d / "gen/spindle/api/service_pb2.py").read_text()


def _in_provider_venv(provider_install: Installed, code: str) -> subprocess.CompletedProcess[str]:
    d = provider_install.dir
    # As the launcher does, from the repository root: the checkout's protobuf-7 stubs must not be imported.
    env = {**os.environ, "PYTHONPATH": f"{d / 'lib'}:{d / 'gen'}", "PYTHONNOUSERSITE": "1", "PYTHONSAFEPATH": "1"}
    return subprocess.run([str(provider_install.venv / "bin" / "python"), "-c", code], capture_output=True,
                          text=True, env=env, timeout=60, cwd=REPO)


def test_committed_stubs_do_not_load_under_the_providers_protobuf(provider_install: Installed) -> None:
    """Why the installer generates its own stubs: the committed ones are protobuf-7 gencode."""
    committed = REPO / "sdk" / "api" / "messages_pb2.py"
    proc = _in_provider_venv(provider_install, "import importlib.util as u; "
                             f"s = u.spec_from_file_location('committed_messages_pb2', {str(committed)!r}); "
                             "s.loader.exec_module(u.module_from_spec(s))")
    assert proc.returncode != 0 and "VersionError" in proc.stderr


def test_provider_internals_in_its_own_environment(provider_install: Installed) -> None:
    code = r'''
import google.protobuf, json
assert google.protobuf.__version__.startswith("5."), google.protobuf.__version__
from spindle_tf.provider import SpindleProvider, effective_config
from spindle_tf.data_sources import NAMESPACE_OBJECT
from spindle_tf.resources import NamespaceResource
from tf.utils import Diagnostics
from tf.types import Unknown
env = {"SPINDLE_ADDRESS": "h:1", "SPINDLE_API_KEY": "k", "SPINDLE_TLS": "true", "SPINDLE_TIMEOUT_SECONDS": "2.5"}
eff = effective_config({"address": "block:2", "api_key": None}, env)
assert eff["address"] == "block:2" and eff["api_key"] == "k" and eff["tls"] is True and eff["timeout_seconds"] == 2.5
t = json.loads(NAMESPACE_OBJECT.tf_type())
assert t[0] == "object" and t[1]["search_attributes"] == ["map", "string"] and t[1]["retention_days"] == "number"
d = Diagnostics()
NamespaceResource(SpindleProvider()).validate(d, "spindle_namespace", {"name": Unknown, "retention_days": -1})
assert [x.summary for x in d.diagnostics] == ["Invalid retention_days -1"], [str(x) for x in d.diagnostics]
schema = SpindleProvider().get_provider_schema(Diagnostics()).to_pb()
assert [a.sensitive for a in schema.block.attributes if a.name == "api_key"] == [True]
# every module loads here (context.py is imported only for type checking otherwise), and the
# provider is what resources and data sources expect of it
import importlib, pkgutil, spindle_tf
for m in pkgutil.iter_modules(spindle_tf.__path__):
    importlib.import_module("spindle_tf." + m.name)
from spindle_tf.context import ProviderContext
assert isinstance(SpindleProvider(), ProviderContext)
print("ok")
'''
    proc = _in_provider_venv(provider_install, code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# ---------------------------------------------------------------- spindle_api_key: secret_file and task_queues

def test_secret_file_is_written_owner_only_and_removed_only_while_it_holds_that_key(tmp_path: Path) -> None:
    from spindle_tf import _secret_file as sf

    assert sf.secret_file_problem(str(tmp_path / "k")) is None
    assert "not an absolute path" in (sf.secret_file_problem("k.key") or "")
    assert "is a directory" in (sf.secret_file_problem(str(tmp_path)) or "")
    assert "a file path" in (sf.secret_file_problem("") or "")
    path = tmp_path / "new" / "dir" / "worker.key"
    sf.write_secret(str(path), "spk_00000000000000aa_secret")
    assert path.read_text() == "spk_00000000000000aa_secret\n"
    assert (path.stat().st_mode & 0o777) == 0o600 and (path.parent.stat().st_mode & 0o777) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["worker.key"]  # no temporary file left behind
    assert not sf.remove_secret(str(path), "00000000000000bb")  # another key's: kept
    assert path.exists()
    assert sf.remove_secret(str(path), "00000000000000aa") and not path.exists()
    assert not sf.remove_secret(str(path), "00000000000000aa")  # already gone: fine


def test_api_key_config_checks_in_the_providers_environment(provider_install: Installed) -> None:
    code = r'''
from spindle_tf.api_keys import ApiKeyResource, check_api_key_config
from tf.types import Unknown

def errors(cfg):
    return [p.detail for p in check_api_key_config(cfg).items]

ok = {"name": "w", "grants": {"orders": "worker"}, "task_queues": {"orders": ["eu", "us"]}, "secret_file": "/tmp/k"}
assert errors(ok) == [], errors(ok)
assert errors({**ok, "grants": Unknown}) == []  # unknown until apply: the server checks
bad = errors({**ok, "grants": {"orders": "writer"}})
assert len(bad) == 1 and "confine a 'worker' grant" in bad[0] and "role 'writer'" in bad[0], bad
bad = errors({**ok, "task_queues": {"billing": ["x"]}})
assert len(bad) == 1 and "no grant" in bad[0], bad
assert any("at least one" in e for e in errors({**ok, "task_queues": {"orders": []}}))
assert any("control characters" in e for e in errors({**ok, "task_queues": {"orders": ["a\x01"]}}))
assert any("system_admin" in e for e in errors({**ok, "system_admin": True}))
assert any("absolute path" in e for e in errors({**ok, "secret_file": "rel.key"}))
attrs = {a.name: a for a in ApiKeyResource.get_schema().attributes}
assert attrs["task_queues"].requires_replace and attrs["secret_file"].requires_replace
assert attrs["system_admin"].type.semantically_equal(None, False)
assert not attrs["system_admin"].type.semantically_equal(None, True)
assert attrs["grants"].type.semantically_equal(None, {}) and not attrs["grants"].type.semantically_equal(None, {"a": "worker"})
assert attrs["task_queues"].type.semantically_equal({"a": ["x", "y"]}, {"a": ["y", "x"]})
print("ok")
'''
    proc = _in_provider_venv(provider_install, code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
