"""Release hygiene: the wheel carries the starter files, the templates and the LICENSE, its
version is bot.__version__ (the one place), and google-re2 is an extra, not a requirement."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import bot

REPO = Path(__file__).resolve().parents[3]


def test_the_wheel_ships_starter_files_templates_license_and_one_version(tmp_path) -> None:
    source = tmp_path / "src"  # a copy: the build leaves build/ and *.egg-info behind
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    for package in ("bot", "handlers", "templates"):
        shutil.copytree(REPO / package, source / package, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                    "--no-build-isolation", "-q", "-w", str(tmp_path)], check=True, timeout=300)
    (wheel,) = tmp_path.glob("trainbot-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = email.message_from_bytes(z.read(next(n for n in names
                                                    if n.endswith(".dist-info/METADATA"))))
    assert {"bot/starter/trainbot.yaml", "bot/starter/slack-manifest.yaml"} <= names
    assert "bot/templates/incident.json.j2" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert meta["Version"] == bot.__version__
    assert meta["License-Expression"] == "Apache-2.0"
    requires = meta.get_all("Requires-Dist") or []
    assert not [r for r in requires if r.startswith("google-re2") and "extra ==" not in r]
    assert any(r.startswith("google-re2") and 'extra == "re2"' in r for r in requires)


def test_license_is_the_apache_2_0_text_pyproject_declares() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and "version" in project["dynamic"]
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert f"## {bot.__version__}" in (REPO / "CHANGELOG.md").read_text()


def test_the_demo_output_folder_is_ignored() -> None:
    ignored = subprocess.run(["git", "check-ignore", "-q", "trainbot-demo-out/config.yaml"],
                             cwd=REPO, check=False)
    assert ignored.returncode == 0
