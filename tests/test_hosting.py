"""The hosted builds (Read the Docs, the GitHub Pages workflow): torch's CPU build and the site's one address.

Neither host is reachable from the test machine, so these tests read the hosts' configuration files and check
what they would install and pass: the requirements file with PyTorch's CPU index, and ``html_baseurl``.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from build_mechanics import site_address
from builds import source_files
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
HOSTED = "requirements-hosted.txt"


def requirement_lines(path: Path) -> list[str]:
    return [
        line.split("#")[0].strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.split("#")[0].strip()
    ]


def test_hosted_requirements_add_the_cpu_index_to_the_pinned_environment():
    assert requirement_lines(ROOT / HOSTED) == [f"--extra-index-url {CPU_INDEX}", "-r requirements.txt"]


def test_the_cpu_build_satisfies_the_torch_pin_and_is_preferred_over_pypis_wheel():
    torch = next(Requirement(line) for line in requirement_lines(ROOT / "requirements.txt") if line.startswith("torch"))
    (pinned,) = [spec.version for spec in torch.specifier]
    cpu_build = Version(f"{pinned}+cpu")
    assert torch.specifier.contains(cpu_build)
    assert cpu_build > Version(pinned)  # pip takes the highest matching version: the CPU index's local version


def test_the_cpu_index_is_written_once():
    """Among the project's files (what git tracks or does not ignore: no environment, no build output)."""
    mentions = [
        name
        for name in source_files()
        if Path(name).suffix in {".txt", ".yml", ".yaml", ".py", ".toml", ".cfg"}
        and Path(name).parts[0] != "tests"
        and CPU_INDEX in (ROOT / name).read_text(encoding="utf-8", errors="replace")
    ]
    assert mentions == [HOSTED]


def test_read_the_docs_installs_the_hosted_requirements_and_passes_its_address():
    config = yaml.safe_load((ROOT / ".readthedocs.yaml").read_text(encoding="utf-8"))
    commands = config["build"]["commands"]
    installs = [c for c in commands if "pip install" in c]
    assert installs and all(f"-r {HOSTED}" in c and "requirements.txt" not in c for c in installs)
    (sphinx,) = [shlex.split(c) for c in commands if "-m sphinx" in c]
    assert sphinx[sphinx.index("-D") + 1] == "html_baseurl=$READTHEDOCS_CANONICAL_URL"


def test_pages_workflow_builds_with_the_hosted_requirements_and_the_pages_address():
    workflow = yaml.safe_load((ROOT / ".github/workflows/docs.yml").read_text(encoding="utf-8"))
    assert workflow["env"]["BUILD_REQUIREMENTS"] == HOSTED  # every job's nox sessions (noxfile.py reads it)
    steps = {step.get("name"): step for step in workflow["jobs"]["build"]["steps"]}
    build = steps["Build the site"]
    assert build["env"]["PAGES_URL"] == "${{ steps.pages.outputs.base_url }}"
    assert 'nox -s docs -- -D "html_baseurl=$PAGES_URL/"' in build["run"]
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    # the variable wins; every build environment is installed from the one file build_requirements names
    assert 'if os.environ.get("BUILD_REQUIREMENTS"):\n        return os.environ["BUILD_REQUIREMENTS"]' in noxfile
    assert "requirements = build_requirements_once()" in noxfile
    assert 'session.install("-r", requirements)' in noxfile
    assert 'install_beside_torch(session, "-r", requirements)' in noxfile
    assert f'HOSTED_REQUIREMENTS = "{HOSTED}"' in noxfile


@pytest.mark.parametrize(
    ("base_url", "path"),
    [
        ("http://127.0.0.1:8000/", "/"),
        ("https://owner.github.io/repo", "/repo/"),
        ("https://lightning-migrate.readthedocs.io/en/latest/", "/en/latest/"),
    ],
)
def test_site_path_of_an_address(base_url, path):
    assert site_address.site_path(base_url) == path
    assert f'<a href="{path}reference/hooks.html">' in site_address.not_found_body(path)


@pytest.mark.parametrize("base_url", ["/migrate/", "127.0.0.1:8000", "file:///tmp/site/"])
def test_an_address_that_is_not_http_is_refused(base_url):
    with pytest.raises(site_address.ConfigError, match="html_baseurl must be an absolute http"):
        site_address.site_path(base_url)
