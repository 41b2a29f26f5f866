"""The services: deploybot.toml's [services.*], else backend and frontend from one
repository, as the catalog (bot/core/catalog.py) and as the deployers need them. `s`: the
Settings; `file`: the deploybot.toml read, if any."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from bot.config import settings_file
from bot.config.fields import Fields
from bot.config.settings_file import DeployerKind, FileConfig, ServiceEntry
from bot.core import wording
from bot.core.catalog import LEGACY_SERVICES, Catalog, Service
from bot.core.code_links import CodeLinks
from bot.core.deploy_command import DRY_RUN


class ServiceSettings(BaseModel):
    """One service as the adapters need it: where its tags come from, how it deploys."""

    model_config = ConfigDict(frozen=True)

    name: str
    deployer: DeployerKind  # registered in bot/wiring/deployers.py
    repo: Path = Path(".")  # the command deployer's git repository
    command: str = DRY_RUN
    github: str | None = None  # owner/name
    workflow: str | None = None
    tag_prefix: str = ""



def catalog(s: Fields, file: FileConfig | None) -> Catalog:
    """The services: deploybot.toml's [services.*], else backend and frontend."""
    if file is None or not file.services:
        return Catalog()
    return Catalog.of(
        Service(name, frozenset(e.environments) if e.environments is not None else None, e.tag_prefix,
                _links(s, e))
        for name, e in file.services.items()
    )


def _links(s: Fields, entry: ServiceEntry) -> CodeLinks:
    """Its code host's pages: its own templates, else GitHub's (of the API's own host: GitHub
    Enterprise serves its API under /api/v3 of the web host), else none."""
    if entry.links is not None:
        return CodeLinks(entry.links.tag, entry.links.commit, entry.links.compare)
    if entry.github:
        api = s.github_api_url.rstrip("/")
        web = "https://github.com" if api == "https://api.github.com" else api.removesuffix("/api/v3")
        return CodeLinks.github(entry.github, web)
    return CodeLinks()


def services(s: Fields, file: FileConfig | None) -> list[ServiceSettings]:
    """How each service deploys. Without [services.*]: backend and frontend from one
    repository, by DEPLOYER."""
    if file is None or not file.services:
        kind = s.deployer
        return [
            ServiceSettings(name=name, deployer=kind, repo=s.git_repo, command=s.deploy_command)
            for name in LEGACY_SERVICES
        ]
    base = file.source.parent if file.source else Path.cwd()
    return [
        ServiceSettings(
            name=name, deployer=e.deployer, repo=(base / e.repo) if e.repo else s.git_repo,
            command=e.command or s.deploy_command, github=e.github, workflow=e.workflow,
            tag_prefix=e.tag_prefix,
        )
        for name, e in file.services.items()
    ]


def service_conflicts(s: Fields, file: FileConfig, environments: frozenset[str]) -> list[str]:
    """With [services.*] each service says how it deploys: the variables that say it for
    backend and frontend must stay unset; GitHub services need GITHUB_TOKEN."""
    if not file.services:
        return []
    name = file.source.name if file.source else settings_file.FILE_NAME
    lines = [
        f"{variable} is set, but {name} has [services]: say it per service there"
        for variable, value in (
            ("DEPLOYER", s.deployer if s.deployer != "command" else None),
            ("GITHUB_REPOSITORY", s.github_repository),
            ("GITHUB_WORKFLOW_BACKEND", s.github_workflow_backend),
            ("GITHUB_WORKFLOW_FRONTEND", s.github_workflow_frontend),
        ) if value
    ]
    on_github = [s for s, entry in file.services.items() if entry.deployer == "github" or entry.github]
    if on_github and not s.github_token:
        lines.append(f"services on GitHub ({', '.join(on_github)}) need GITHUB_TOKEN")
    for service, entry in file.services.items():
        for i, env in enumerate(entry.environments or ()):
            if env not in environments:
                where = settings_file.key_path(("services", service, "environments", i))
                why = wording.undeclared_environment(env, environments, name, bool(file.environments))
                lines.append(f"{where}: {why}")
        for env in entry.verify:
            if env not in environments:
                where = settings_file.key_path(("services", service, "verify", env))
                why = wording.undeclared_environment(env, environments, name, bool(file.environments))
                lines.append(f"{where}: {why}")
    return lines
