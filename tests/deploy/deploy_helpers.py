"""Helpers of tests/deploy: the repository's Dockerfile as instructions, the example cluster configuration.

(Named uniquely: test folders have no ``__init__.py`` and share one module namespace.)
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"


@dataclass
class Instruction:
    """One Dockerfile instruction: ``keyword`` upper-cased, ``args`` the raw text after it (continuations joined)."""

    keyword: str
    args: str
    line: int

    def exec_form(self) -> list[str]:
        """The JSON (exec) form's list; AssertionError when the instruction uses the shell form."""
        value = json.loads(self.args)
        assert isinstance(value, list) and all(isinstance(v, str) for v in value), \
            f"line {self.line}: {self.keyword} must use the exec (JSON list) form, got {self.args!r}"
        return value


@dataclass
class Stage:
    """A build stage: its ``FROM`` image, name, and its instructions."""

    image: str
    name: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """(global ARG defaults, stages) of a Dockerfile: comments dropped, ``\\`` continuations joined."""
    instructions: list[Instruction] = []
    pending, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue
        if not pending:
            start = n
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, args = whole.partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), start))
    assert not pending, "the Dockerfile ends in a line continuation"
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            m = re.match(r"^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$", ins.args, re.IGNORECASE)
            assert m, f"line {ins.line}: cannot read FROM {ins.args!r}"
            image = re.sub(r"\$\{(\w+)\}", lambda v: args.get(v.group(1), v.group(0)), m.group(1))
            stages.append(Stage(image=image, name=m.group(2) or str(len(stages))))
        elif not stages:
            assert ins.keyword == "ARG", f"line {ins.line}: only ARG may come before the first FROM"
            name, _, default = ins.args.partition("=")
            args[name.strip()] = default.strip()
        else:
            stages[-1].instructions.append(ins)
    return args, stages


def dockerfile() -> tuple[dict[str, str], list[Stage]]:
    return parse_dockerfile(DOCKERFILE.read_text())


def healthcheck_command(stage: Stage) -> list[str]:
    """The HEALTHCHECK's ``CMD`` (exec form) of ``stage``."""
    (hc,) = stage.all("HEALTHCHECK")
    m = re.search(r"\bCMD\s+(\[.*\])\s*$", hc.args)
    assert m, f"line {hc.line}: HEALTHCHECK must end in CMD [\"...\"] (exec form), got {hc.args!r}"
    return json.loads(m.group(1))


def copies(stage: Stage) -> list[tuple[list[str], str, dict[str, str]]]:
    """Each COPY of ``stage`` as (sources, destination, flags)."""
    out = []
    for ins in stage.all("COPY"):
        words = shlex.split(ins.args)
        flags = dict(w[2:].split("=", 1) for w in words if w.startswith("--"))
        paths = [w for w in words if not w.startswith("--")]
        out.append((paths[:-1], paths[-1], flags))
    return out


def example_cluster_config() -> dict[str, Any]:
    """The example of ``spindle server start --config`` in spindle.controlplane.cluster._config's docstring."""
    import textwrap

    import yaml

    from spindle.controlplane.cluster import _config

    doc = _config.__doc__ or ""
    m = re.search(r"Example::\n\n(.*?)\n\n\S", doc, re.DOTALL)
    assert m, "the cluster configuration's docstring has no 'Example::' block"
    return yaml.safe_load(textwrap.dedent(m.group(1)))


def port_of(hostport: str) -> int:
    return int(str(hostport).rpartition(":")[2])
