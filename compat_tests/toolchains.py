"""Building and running the Java and Go scenario programs from the compat tests.

The builds run once per test run, before the first test (compat_tests/prerequisites.py), each
within BUILD_TIMEOUT_S and printing its progress: a first build downloads the clients from Maven
Central and the Go module proxy. A missing JDK, Maven or Go toolchain is a BuildError that fails
the tests needing it, with a clear message (never a skip): the README promises that
`python -m pytest` proves the broker with all three official clients. Each program reports one
line per scenario, ``RESULT <name> PASS|FAIL`` followed by ``DETAIL <name> <text>`` lines; the
pytest wrappers assert each scenario on its own.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
JAVA_DIR = HERE / "java"
GO_DIR = HERE / "go"
JAVA_CLASSPATH_FILE = JAVA_DIR / "target" / "classpath.txt"
ADMIN_JAVA_DIR = HERE / "admin_java"
PULSAR_ADMIN_CLI_DIR = HERE / "pulsar_admin_cli"
GO_BINARY = GO_DIR / "bin" / "compat.test"
GO_CROSS_CLIENT = GO_DIR / "bin" / "crossclient"
BUILD_TIMEOUT_S = 1800     # one build, downloads included, on a slow first run
PROGRESS_EVERY_S = 30
OUTPUT_TAIL_LINES = 80
BUILD_STAMP = "pulsard-sources.sha256"
#: How the suite starts its client JVMs (scenario programs, pulsar-admin, the admin drivers): with
#: the C1 compiler only. They run for seconds to a minute, mostly waiting on the broker, and C2's
#: warm-up cost them more CPU than it saved on a 2-core machine the broker shares (a pulsar-admin
#: batch of 65 commands: 6.4 s of CPU, 2.2 s with C1 only).
JAVA = ["java", "-XX:TieredStopAtLevel=1"]


def copy_dependencies(output_dir: str) -> list[str]:
    """Maven's copy-dependencies goal (pinned: Maven 3.8's default plugin is older) into output_dir."""
    return ["org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies",
            f"-DoutputDirectory={output_dir}", "-DincludeScope=runtime"]


Say = Callable[[str], None]


class BuildError(RuntimeError):
    """A toolchain is missing, or a build failed or overran its limit; the text is the build's own."""


def require_tools(*names: str) -> None:
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        raise BuildError(f"toolchain missing from PATH: {', '.join(missing)} "
                         f"(the compat suite needs Java 17 + Maven and Go to run the official clients)")


def tail(text: str, lines: int = OUTPUT_TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


def run_build(cmd: list[str], cwd: Path, what: str, say: Say) -> None:
    """Run a build command, saying every PROGRESS_EVERY_S how long it has run and how many
    downloads its output has named (Maven's "Downloading from", Go's "go: downloading");
    a failure or overrun raises BuildError with the output's tail."""
    process = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    started = time.monotonic()
    while True:
        try:
            process.wait(timeout=PROGRESS_EVERY_S)
            break
        except subprocess.TimeoutExpired:
            elapsed = time.monotonic() - started
            if elapsed > BUILD_TIMEOUT_S:
                process.kill()
                process.wait()
                reader.join()
                raise BuildError(f"{what} did not finish within {BUILD_TIMEOUT_S} s: {' '.join(cmd)}\n"
                                 f"{tail(''.join(lines))}")
            downloads = sum("downloading" in line.lower() for line in lines)
            say(f"{what}: {elapsed:.0f} s, {downloads} downloads so far")
    reader.join()
    if process.returncode != 0:
        raise BuildError(f"{what} failed ({process.returncode}): {' '.join(cmd)}\n{tail(''.join(lines))}")


def sources_digest(project: Path) -> str:
    """pom.xml and every file under src/, by name and content: what a Maven build compiles."""
    files = sorted([project / "pom.xml", *(path for path in (project / "src").rglob("*") if path.is_file())])
    return hashlib.sha256("".join(f"{path.relative_to(project)} {hashlib.sha256(path.read_bytes()).hexdigest()}\n"
                                  for path in files).encode()).hexdigest()


def maven_build(project: Path, goals: list[str], outputs_present: Callable[[], bool], say: Say) -> None:
    """Run Maven in the project unless its last good build compiled these very sources and its
    outputs are all there (Maven on an unchanged project still costs 6-11 s of CPU a project, on
    every run). The digest of what was compiled is kept in target/ beside the classes."""
    require_tools("java", "mvn")
    what = f"Maven build of compat_tests/{project.name}"
    stamp, digest = project / "target" / BUILD_STAMP, sources_digest(project)
    if stamp.is_file() and stamp.read_text().strip() == digest and outputs_present():
        say(f"{what}: sources unchanged since its last build, Maven not run")
        return
    run_build(["mvn", "-B", *goals], project, what, say)
    stamp.write_text(digest + "\n")


def _java_classpath() -> list[Path]:
    return [JAVA_DIR / "target" / "classes", *map(Path, JAVA_CLASSPATH_FILE.read_text().strip().split(":"))]


def build_java(say: Say) -> list[str]:
    """Compile the Java scenarios with Maven; return the `java` command line prefix."""
    maven_build(JAVA_DIR, ["compile", "dependency:build-classpath", f"-Dmdep.outputFile={JAVA_CLASSPATH_FILE}"],
                lambda: JAVA_CLASSPATH_FILE.is_file() and all(path.exists() for path in _java_classpath()), say)
    return [*JAVA, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", ":".join(map(str, _java_classpath()))]


def _build_java_with_lib(project: Path, say: Say) -> str:
    """Compile a Maven project and copy its runtime jars to target/lib; return its classpath."""
    classes, lib = project / "target" / "classes", project / "target" / "lib"
    maven_build(project, ["compile", *copy_dependencies("target/lib")],
                lambda: classes.is_dir() and any(lib.glob("*.jar")), say)
    return f"{classes}:{lib}/*"


def build_admin_java(say: Say) -> str:
    """compat_tests/admin_java: scenarios of the official Java admin client."""
    return _build_java_with_lib(ADMIN_JAVA_DIR, say)


def build_pulsar_admin_cli(say: Say) -> str:
    """compat_tests/pulsar_admin_cli: Pulsar's pulsar-admin (org.apache.pulsar:pulsar-client-tools)
    and its batch runner."""
    return _build_java_with_lib(PULSAR_ADMIN_CLI_DIR, say)


def build_go(say: Say) -> tuple[Path, Path]:
    """Compile the Go scenarios into one test binary, and the cross-client program."""
    require_tools("go")
    GO_BINARY.parent.mkdir(exist_ok=True)
    run_build(["go", "test", "-c", "-o", str(GO_BINARY), "."], GO_DIR, "go test -c in compat_tests/go", say)
    run_build(["go", "build", "-o", str(GO_CROSS_CLIENT), "./cmd/crossclient"], GO_DIR,
              "go build of compat_tests/go/cmd/crossclient", say)
    return GO_BINARY, GO_CROSS_CLIENT


def java_scenarios() -> list[str]:
    """Names of the @Scenario methods, read from the sources (no toolchain needed to collect)."""
    pattern = re.compile(r"@Scenario\s+public static void (\w+)\(")
    return sorted(name for path in (JAVA_DIR / "src").rglob("*.java")
                  for name in pattern.findall(path.read_text()))


def marked_java_scenarios(project: str, marker: str) -> list[str]:
    """Names of the methods of compat_tests/<project> carrying this annotation (run by a main of
    their own: the Spark connector's calls, the topic limits)."""
    pattern = re.compile(rf"@{marker}\s+public static void (\w+)\(")
    return sorted(name for path in (HERE / project / "src").rglob("*.java")
                  for name in pattern.findall(path.read_text()))


#: Go scenarios that need a broker of their own kind: TLS and authentication, transactions.
GO_SPECIAL_PREFIXES = ("TestSecured", "TestTxnBuffer", "TestTxnPendingAck")


def go_scenarios(prefix: str = "") -> list[str]:
    """Names of the Test functions of the Go module (no toolchain needed to collect): those
    for a default broker, or those starting with one of GO_SPECIAL_PREFIXES (TestSecured*: TLS
    and authentication; TestTxnBuffer*, TestTxnPendingAck*: a broker with
    transactions)."""
    pattern = re.compile(r"^func (Test\w+)\(t \*testing\.T\)", re.MULTILINE)
    names = (name for path in GO_DIR.glob("*_test.go") for name in pattern.findall(path.read_text()))
    if prefix:
        return sorted(name for name in names if name.startswith(prefix))
    return sorted(name for name in names if not name.startswith(GO_SPECIAL_PREFIXES))


@dataclass
class ScenarioReport:
    """Parsed RESULT / DETAIL lines of one program run, with its raw output for diagnostics."""
    passed: dict[str, bool] = field(default_factory=dict)
    details: dict[str, list[str]] = field(default_factory=dict)
    output: str = ""

    @classmethod
    def parse(cls, output: str) -> "ScenarioReport":
        report = cls(output=output)
        for line in output.splitlines():
            kind, _, rest = line.partition(" ")
            name, _, text = rest.partition(" ")
            if kind == "RESULT":
                report.passed[name] = text.strip() == "PASS"
            elif kind == "DETAIL":
                report.details.setdefault(name, []).append(text)
        return report

    def assert_passed(self, name: str) -> None:
        assert name in self.passed, f"scenario {name} reported no result; program output:\n{tail(self.output)}"
        assert self.passed[name], f"scenario {name} failed:\n" + "\n".join(self.details.get(name, []))


def run_program(cmd: list[str], timeout_s: float, env: dict[str, str] | None = None) -> ScenarioReport:
    """Run a scenario program to the end (bounded) and parse its report."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return ScenarioReport.parse(out + f"\n(program killed after {timeout_s}s)")
    return ScenarioReport.parse(f"{done.stdout}\n--- stderr ---\n{tail(done.stderr)}")
