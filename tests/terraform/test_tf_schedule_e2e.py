"""``spindle_schedule`` end to end: terraform (on PATH) against a real `spindle server start-dev`.

Create, no-op plan, in-place update (the schedule is not replaced: its creation time and
actions stay), pause and unpause through ``paused``, drift (paused or re-timed through the
API), deletion outside Terraform, import, destroy, and bad input refused at plan time.
Every effect is checked through Spindle's gRPC API.
"""

from __future__ import annotations

import json

from typing import Any, Callable

import grpc
import pytest

from _tf_harness import Api, DevServer, Terraform, provider_block

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc

pytestmark = pytest.mark.timeout(300)

MakeTf = Callable[..., Terraform]


def config(address: str, *, cron: str = '["0 6 * * *"]', extra: str = "", input: str = '["eu", 3]') -> str:
    return provider_block(address) + f'''
resource "spindle_schedule" "sales" {{
  schedule_id      = "tf-sales"
  cron_expressions = {cron}
  intervals        = ["60m/15m"]
  time_zone        = "Europe/Berlin"
  workflow_type    = "DailySales"
  task_queue       = "reports"
  input            = jsonencode({input})
{extra}}}
'''


def describe(api: Api, sid: str, namespace: str = "default") -> Any:
    try:
        return api.stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace=namespace, schedule_id=sid), timeout=10)
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.NOT_FOUND:
            return None
        raise


def args_of(d: Any) -> list[Any]:
    return [json.loads(p.data) for p in d.schedule.action.input.payloads]


def test_schedule_lifecycle(make_tf: MakeTf, spindle_server: DevServer, api: Api) -> None:
    addr = spindle_server.address
    tf = make_tf("schedule")
    tf.write(config(addr))
    tf.run("init")
    res = tf.run("plan", "-detailed-exitcode", expect=2)
    assert "spindle_schedule.sales will be created" in res.out
    assert describe(api, "tf-sales") is None, "plan must not create anything"

    tf.run("apply", "-auto-approve")
    d = describe(api, "tf-sales")
    assert d is not None
    assert list(d.schedule.spec.cron_expressions) == ["0 6 * * *"]
    assert [(i.every_ms, i.offset_ms) for i in d.schedule.spec.intervals] == [(3_600_000, 900_000)]
    assert d.schedule.spec.time_zone_name == "Europe/Berlin"
    a = d.schedule.action
    assert (a.workflow_type, a.workflow_id, a.task_queue) == ("DailySales", "tf-sales", "reports")
    assert args_of(d) == ["eu", 3] and a.input.payloads[0].metadata["encoding"] == b"json/plain"
    assert d.schedule.policies.overlap_policy in (0, pb.SCHEDULE_OVERLAP_POLICY_SKIP) and not d.schedule.state.paused
    created = d.info.create_time_ms
    tf.run("plan", "-detailed-exitcode", expect=0)  # "60m/15m" reads back as written

    # in place: new cron, input, overlap, catch-up window; the schedule is not replaced
    tf.write(config(addr, cron='["30 7 * * MON-FRI"]', input='["us", 5]',
                    extra='  overlap = "BUFFER_ONE"\n  catchup_window_seconds = 3600\n  jitter_seconds = 30\n'))
    res = tf.run("plan", "-detailed-exitcode", expect=2)
    assert "updated in-place" in res.out and "0 to add, 1 to change, 0 to destroy" in res.out
    tf.run("apply", "-auto-approve")
    d = describe(api, "tf-sales")
    assert list(d.schedule.spec.cron_expressions) == ["30 7 * * MON-FRI"] and args_of(d) == ["us", 5]
    assert d.schedule.policies.overlap_policy == pb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE
    assert d.schedule.policies.catchup_window_ms == 3_600_000 and d.schedule.spec.jitter_ms == 30_000
    assert d.info.create_time_ms == created, "an in-place change must not replace the schedule"
    tf.run("plan", "-detailed-exitcode", expect=0)

    # pause through the attribute, with a note; then unpause
    base = dict(cron='["30 7 * * MON-FRI"]', input='["us", 5]')
    keep = '  overlap = "BUFFER_ONE"\n  catchup_window_seconds = 3600\n  jitter_seconds = 30\n'
    tf.write(config(addr, **base, extra=keep + '  paused = true\n  note = "quarter close"\n'))
    tf.run("apply", "-auto-approve")
    d = describe(api, "tf-sales")
    assert d.schedule.state.paused and d.schedule.state.notes == "quarter close"
    assert list(d.info.future_action_times_ms) == []
    tf.run("plan", "-detailed-exitcode", expect=0)
    tf.write(config(addr, **base, extra=keep))
    tf.run("apply", "-auto-approve")
    d = describe(api, "tf-sales")
    assert not d.schedule.state.paused and len(d.info.future_action_times_ms) > 0
    tf.run("plan", "-detailed-exitcode", expect=0)

    # drift: paused and re-timed through the API; the plan shows it, apply puts the configuration back
    api.stub.PatchSchedule(svc.PatchScheduleRequest(namespace="default", schedule_id="tf-sales",
                                                    patch=svc.SchedulePatch(pause="by hand")), timeout=10)
    res = tf.run("plan", "-detailed-exitcode", expect=2)
    assert "paused" in res.out and "true -> null" in res.out
    changed = pb.Schedule()
    changed.CopyFrom(describe(api, "tf-sales").schedule)
    del changed.spec.cron_expressions[:]
    changed.spec.cron_expressions.append("0 0 * * *")
    api.stub.UpdateSchedule(svc.UpdateScheduleRequest(namespace="default", schedule_id="tf-sales", schedule=changed),
                            timeout=10)
    res = tf.run("plan", "-detailed-exitcode", expect=2)
    assert '"0 0 * * *"' in res.out and '"30 7 * * MON-FRI"' in res.out
    tf.run("apply", "-auto-approve")
    d = describe(api, "tf-sales")
    assert not d.schedule.state.paused and list(d.schedule.spec.cron_expressions) == ["30 7 * * MON-FRI"]
    tf.run("plan", "-detailed-exitcode", expect=0)

    # deleted outside Terraform: planned for creation again
    api.stub.DeleteSchedule(svc.DeleteScheduleRequest(namespace="default", schedule_id="tf-sales"), timeout=10)
    res = tf.run("plan", "-detailed-exitcode", expect=2)
    assert "will be created" in res.out
    tf.run("apply", "-auto-approve")
    assert describe(api, "tf-sales") is not None

    # import by id: forget it, import it, the plan is clean
    tf.run("state", "rm", "spindle_schedule.sales")
    res = tf.run("import", "spindle_schedule.sales", "default/tf-sales")
    assert "Import successful" in res.out
    tf.run("plan", "-detailed-exitcode", expect=0)
    tf.run("state", "rm", "spindle_schedule.sales")
    tf.run("import", "spindle_schedule.sales", "tf-sales")  # the provider's namespace
    tf.run("plan", "-detailed-exitcode", expect=0)
    res = tf.run("import", "spindle_schedule.other", "default/nope", expect=1)

    res = tf.run("destroy", "-auto-approve")
    assert "1 destroyed" in res.out
    assert describe(api, "tf-sales") is None


@pytest.mark.parametrize(("extra", "says"), [
    ('  overlap = "SOMETIMES"\n', "overlap: 'SOMETIMES'; one of SKIP"),
    ('  time_zone_x = 1\n', "Unsupported argument"),
])
def test_bad_attributes_are_refused_at_plan(make_tf: MakeTf, spindle_server: DevServer, api: Api, extra: str,
                                            says: str) -> None:
    tf = make_tf("bad")
    tf.write(config(spindle_server.address, extra=extra))
    tf.run("init")
    res = tf.run("plan", expect=1)
    assert says in res.flat
    assert describe(api, "tf-sales") is None


def test_bad_times_are_refused_at_plan_and_a_bad_cron_at_apply(make_tf: MakeTf, spindle_server: DevServer,
                                                                api: Api) -> None:
    addr = spindle_server.address
    tf = make_tf("times")
    block = provider_block(addr) + '''
resource "spindle_schedule" "x" {
  schedule_id   = "tf-bad"
  workflow_type = "T"
  task_queue    = "q"
BODY}
'''
    tf.write(block.replace("BODY", '  intervals = ["1x"]\n  time_zone = "Mars/Olympus"\n'))
    tf.run("init")
    res = tf.run("plan", expect=1)
    assert "intervals[0]: '1x' is not a duration" in res.flat and "time_zone: 'Mars/Olympus'" in res.flat
    tf.write(block.replace("BODY", ""))
    res = tf.run("plan", expect=1)
    assert "A schedule needs times" in res.flat
    tf.write(block.replace("BODY", '  cron_expressions = ["61 * * * *"]\n'))
    res = tf.run("apply", "-auto-approve", expect=1)
    assert "Cannot create schedule 'tf-bad'" in res.flat and "field 1 (minute) '61'" in res.flat
    assert "cron_expressions" in res.flat
    assert describe(api, "tf-bad") is None


def test_a_schedule_in_a_namespace_made_in_the_same_configuration(make_tf: MakeTf, spindle_server: DevServer,
                                                                   api: Api) -> None:
    tf = make_tf("in-namespace")
    tf.write(provider_block(spindle_server.address) + '''
resource "spindle_namespace" "reports" {
  name = "tf-reports"
}
resource "spindle_schedule" "nightly" {
  schedule_id   = "nightly"
  namespace     = spindle_namespace.reports.name
  intervals     = ["1d/2h"]
  workflow_type = "Nightly"
  task_queue    = "reports"
}
''')
    tf.run("init")
    tf.run("apply", "-auto-approve")
    d = describe(api, "nightly", namespace="tf-reports")
    assert d is not None and [(i.every_ms, i.offset_ms) for i in d.schedule.spec.intervals] == [(86_400_000, 7_200_000)]
    assert describe(api, "nightly") is None  # not in the provider's namespace
    res = tf.run("state", "show", "spindle_schedule.nightly")
    assert '"tf-reports/nightly"' in res.out
    tf.run("plan", "-detailed-exitcode", expect=0)
    tf.run("state", "rm", "spindle_schedule.nightly")
    tf.run("import", "spindle_schedule.nightly", "tf-reports/nightly")
    tf.run("plan", "-detailed-exitcode", expect=0)
    tf.run("destroy", "-auto-approve")
    assert api.describe("tf-reports") is None
