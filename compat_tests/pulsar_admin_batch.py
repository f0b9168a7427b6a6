"""Apache Pulsar's own pulsar-admin (compat_tests/pulsar_admin_cli) run against a broker: many
command lines per JVM through PulsardBatch, each with PulsarAdminTool.run's result and output."""

from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path

from compat_tests import toolchains

RUN_TIMEOUT_S = 120
JAVA = [*toolchains.JAVA, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp"]


def client_conf(broker, directory: Path) -> Path:
    conf = directory / "client.conf"
    conf.write_text(f"webServiceUrl={broker.web_url}\nbrokerServiceUrl={broker.service_url}\n")
    return conf


def run_batch(classpath: str, conf: Path, commands: list[list[str]], tmp_path: Path) -> list[tuple[bool, str]]:
    """(PulsarAdminTool.run's result, output) of each command, in order."""
    command_file = tmp_path / f"commands-{uuid.uuid4().hex[:6]}.tsv"
    command_file.write_text("".join("\t".join(command) + "\n" for command in commands))
    run = subprocess.run([*JAVA, classpath, "org.apache.pulsar.admin.cli.PulsardBatch", str(conf), str(command_file)],
                         capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = [(ok == "true", body.strip()) for _, body, ok in
               re.findall(r"^@@@ BEGIN (\d+)\n(.*?)^@@@ END \1 (true|false)$", run.stdout, re.S | re.M)]
    assert len(results) == len(commands), run.stdout[-3000:]
    return results


def outputs(commands: list[list[str]], results: list[tuple[bool, str]]) -> dict[str, str]:
    """Command line -> output, after checking that every command succeeded."""
    failed = [(" ".join(c), out) for c, (ok, out) in zip(commands, results) if not ok]
    assert not failed, failed
    return {" ".join(c): out for c, (_, out) in zip(commands, results)}
