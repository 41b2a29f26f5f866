"""Links to a service's code host: GitHub's for a service with `github`, URL templates for any
other host ([services.NAME.links]), none without either; values escaped for a URL's path."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.adapters.http.console import grid, services
from bot.config.settings import Settings
from bot.core.catalog import Service
from bot.core.code_links import CodeLinks
from bot.runtime.ports import DeployRecord
from tests.adapters.http.console.test_console_pages import page
from tests.config.settings_helpers import clean_environment, problems_of  # noqa: F401 (clean_environment: autouse)
from tests.people_kinds import KINDS

CONFIG = """
[environments.staging]

[services.web]
github = "acme/web"

[services.api]
command = "true"
[services.api.links]
tag = "https://git.example.com/acme/api/-/tags/{tag}"
commit = "https://git.example.com/acme/api/-/commit/{commit}"
compare = "https://git.example.com/acme/api/-/compare/{from}...{to}"

[services.worker]
command = "true"
"""


def test_github_templates_or_none_per_service(tmp_path, monkeypatch):
    (tmp_path / "deploybot.toml").write_text(CONFIG)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    catalog = Settings(_env_file=None).policy(KINDS).catalog
    web, api, worker = (catalog.services[n].links for n in ("web", "api", "worker"))
    assert web.for_tag("v1.2.3") == "https://github.com/acme/web/tree/v1.2.3"
    assert web.for_commit("a" * 40) == f"https://github.com/acme/web/commit/{'a' * 40}"
    assert web.for_compare("a" * 7, "b" * 7) == "https://github.com/acme/web/compare/aaaaaaa...bbbbbbb"
    assert api.for_tag("web/v1 2") == "https://git.example.com/acme/api/-/tags/web/v1%202"
    assert api.for_compare("x", "y") == "https://git.example.com/acme/api/-/compare/x...y"
    assert (worker.for_tag("v1"), worker.for_commit("a" * 40), worker.for_compare("a", "b")) == ("", "", "")
    assert web.for_compare("a", "a") == "" and web.for_tag("") == ""


def test_github_enterprise_links_to_its_own_host(tmp_path, monkeypatch):
    (tmp_path / "deploybot.toml").write_text(CONFIG)
    monkeypatch.setenv("GITHUB_API_URL", "https://ghe.example.com/api/v3")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    web = Settings(_env_file=None).policy(KINDS).catalog.services["web"].links
    assert web.for_tag("v1") == "https://ghe.example.com/acme/web/tree/v1"


def test_a_template_that_is_no_link_is_refused(tmp_path):
    for links, problem in (
        ('tag = "javascript:alert(1)//{tag}"', "links.tag must be an http:// or https:// address"),
        ('commit = "https://git.example.com/commit/"', "links.commit must hold {commit}"),
        ('compare = "https://x/{from}"', "links.compare must hold {to}"),
    ):
        found = problems_of(tmp_path, f'[services.api]\ncommand = "true"\n[services.api.links]\n{links}\n')
        assert any(problem in p for p in found), found
    assert CodeLinks().for_tag("v1") == ""


def test_the_service_page_links_tags_commits_and_compares_to_the_code_host():
    at = datetime(2026, 12, 2, 12, tzinfo=UTC)
    here = DeployRecord("production", "web", 'v2"><b>x', "b" * 40, True, at, "alice", "t1", "d1")
    before = DeployRecord("staging", "web", "v3", "c" * 40, True, at, "alice", "t2", "d2")
    places = [services.Place(grid.Cell("web", "staging", True, before, ("deployed",)), (), None),
              services.Place(grid.Cell("web", "production", True, here, ("deployed",), differs_from="staging"),
                             (), None)]
    links = CodeLinks.github("acme/web")
    html = page("service.html", service=Service("web", links=links), places=places,
                history=[here, before], may_deploy=True, code_links=lambda name: links)
    assert 'href="https://github.com/acme/web/tree/v2%22%3E%3Cb%3Ex"' in html and "<b>x" not in html
    assert f'href="https://github.com/acme/web/commit/{"b" * 40}"' in html
    assert f'href="https://github.com/acme/web/compare/{"b" * 40}...{"c" * 40}"' in html
    plain = page("service.html", service=Service("web"), places=places, history=[here], may_deploy=False)
    assert "github.com" not in plain and "code-link" not in plain and "/console/deploy?" not in plain
