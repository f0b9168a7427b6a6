"""The Java side of the cluster kit: the jars of ZooKeeper and BookKeeper, fetched by Maven.

``ensure_jars()`` runs ``mvn package`` on the kit's pom.xml once; the runtime dependencies
(bookkeeper-server 4.17.2, zookeeper 3.9.3 and the two jars bookkeeper-server leaves out of
ZooKeeper) are copied to ``~/.cache/pulsard/bk-lib`` (``PULSARD_BK_LIB`` overrides), outside
the repository. A stamp file holding the pom's hash says the copy is complete; a changed pom
fetches again. Maven's output is handed line by line to ``progress`` (the first run downloads
about 95 MB, which takes a while), so callers can show that something is happening.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

logger = logging.getLogger(__name__)

POM = Path(__file__).with_name("pom.xml")
STAMP = ".pom-sha256"

Progress = Callable[[str], None]


class ToolchainError(RuntimeError):
    """java or mvn is missing, or Maven could not fetch the jars."""


def _artifact(line: str) -> str:
    """The file name in a "Downloaded from central: https://.../x-1.0.jar (12 kB at ...)" line."""
    urls = [word for word in line.split() if "://" in word]
    return urls[-1].rsplit("/", 1)[-1] if urls else line


def lib_dir() -> Path:
    override = os.environ.get("PULSARD_BK_LIB")
    if override:
        return Path(override)
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "pulsard" / "bk-lib"


def java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise ToolchainError("java not found (install a JDK 17+, e.g. apt-get install openjdk-17-jdk-headless)")
    return found


def _pom_hash() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def jars_ready(lib: Path | None = None) -> bool:
    lib = lib or lib_dir()
    stamp = lib / STAMP
    return stamp.exists() and stamp.read_text().strip() == _pom_hash()


def ensure_jars(progress: Progress | None = None) -> Path:
    """The directory of the kit's jars, running Maven first when they are not there yet."""
    lib = lib_dir()
    if jars_ready(lib):
        return lib
    say = progress or logger.info
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ToolchainError("mvn not found (install Maven, e.g. apt-get install maven)")
    java_executable()
    lib.mkdir(parents=True, exist_ok=True)
    say(f"fetching the ZooKeeper and BookKeeper jars with Maven into {lib} (first run only)")
    with tempfile.TemporaryDirectory(prefix="pulsard-kit-build-") as build:
        shutil.copy(POM, Path(build) / "pom.xml")
        command = [mvn, "-B", "package", f"-Dkit.lib={lib}"]
        process = subprocess.Popen(command, cwd=build, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        assert process.stdout is not None
        tail: list[str] = []
        downloaded = 0
        for line in process.stdout:
            line = line.rstrip()
            tail = (tail + [line])[-40:]
            if "Downloaded from" in line:
                downloaded += 1
                if downloaded % 20 == 1:
                    say(f"maven: {downloaded} files downloaded so far ({_artifact(line)})")
            elif "BUILD" in line or "ERROR" in line:
                say(f"maven: {line.removeprefix('[INFO] ')}")
        if process.wait() != 0:
            raise ToolchainError("mvn package failed:\n" + "\n".join(tail))
    (lib / STAMP).write_text(_pom_hash() + "\n")
    say(f"jars ready: {sum(1 for _ in lib.glob('*.jar'))} in {lib}")
    return lib
