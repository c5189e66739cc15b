"""Cluster members as child processes: ``spindle server start --config FILE`` on one emulator database."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

from pathlib import Path
from typing import Any

import yaml

SPINDLE = str(Path(sys.executable).parent / "spindle")
LISTEN_RE = re.compile(r"spindle cluster member (\S+) listening on (\S+) \((?:[^)]*?internal (\S+),)?")


def write_config(path: Path, *, project: str, instance: str, database: str, member_id: str, num_shards: int,
                 ttl: float, renew: float, tls: dict[str, str] | None = None, internal: dict[str, Any] | None = None,
                 sections: dict[str, Any] | None = None, **server: Any) -> Path:
    """A member's YAML configuration (``tls:`` and ``internal:`` sections when given).

    ``sections``: more top-level sections, written as given (e.g. an ``auth:`` section).
    """
    doc: dict[str, Any] = {
        "store": {"spanner": {"project": project, "instance": instance, "database": database}},
        "num_shards": num_shards, "listen": "127.0.0.1:0", "member_id": member_id,
        "lease": {"ttl": f"{ttl}s", "renew_interval": f"{renew}s"}, "server": server, "log_level": "info",
        "auth": {"mode": "none"}, "metrics": {"listen": "127.0.0.1:0"},  # several members on one machine
    }
    if tls is not None:
        doc["tls"] = tls
    if internal is not None:
        doc["internal"] = internal
    doc.update(sections or {})
    path.write_text(yaml.safe_dump(doc))
    return path


class Member:
    """One ``spindle server start`` child process."""

    def __init__(self, config: Path, env: dict[str, str]) -> None:
        self.config = config
        self.env = env
        self.proc: subprocess.Popen[str] | None = None
        self.member_id = ""
        self.address = ""  # public listener (clients)
        self.internal_address = ""  # internal listener (members)
        self.log_path = str(config) + ".log"

    def start(self) -> "Member":
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen([SPINDLE, "server", "start", "--config", str(self.config)],
                                     stdout=subprocess.PIPE, stderr=log, text=True,
                                     env={**os.environ, **self.env, "PYTHONUNBUFFERED": "1"})
        log.close()
        return self

    def wait_listening(self, timeout: float = 60.0) -> "Member":
        assert self.proc is not None and self.proc.stdout is not None
        found: dict[str, str] = {}
        stdout = self.proc.stdout

        def read() -> None:
            for line in stdout:
                m = LISTEN_RE.search(line)
                if m and not found:
                    found.update(id=m.group(1), addr=m.group(2), internal=m.group(3) or "")
            # keep draining after the first line so the child never blocks on a full pipe

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not found:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"member did not start; log:\n{Path(self.log_path).read_text()[-4000:]}")
            time.sleep(0.05)
        self.member_id, self.address, self.internal_address = found["id"], found["addr"], found["internal"]
        return self

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGCONT)
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log(self) -> str:
        return Path(self.log_path).read_text()


def setup_schema(config: Path, env: dict[str, str]) -> str:
    """Run ``spindle admin setup-schema --config FILE``; its output."""
    out = subprocess.run([SPINDLE, "admin", "setup-schema", "--config", str(config)], capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout
