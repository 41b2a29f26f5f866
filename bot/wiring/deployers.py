"""The deployers, by kind: how each service's deployer is built from the settings.

A service's `deployer` (deploybot.toml's `[services.x] deployer = "..."`, or DEPLOYER for
backend and frontend) names one of DEPLOYERS. A new kind is a module in
bot/adapters/deployers (a DeployRunner, paired with the git or GitHub versions already there),
a builder here and one line in DEPLOYERS, and its settings (docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Callable

from bot.adapters.deployers.command import CommandDeployer
from bot.config.settings import ConfigError, ServiceSettings, Settings
from bot.runtime.ports import Deployer, LiveOutput

Build = Callable[[Settings, ServiceSettings], Deployer]


def command(settings: Settings, service: ServiceSettings) -> Deployer:
    """Tags from a local git repository, deploys by running the deploy command there."""
    return CommandDeployer(service.repo, service.command, settings.deploy_timeout, settings.deploy_passthrough())


def github(settings: Settings, service: ServiceSettings) -> Deployer:
    """Tags from GitHub, deploys by a GitHub Actions workflow."""
    from bot.adapters.deployers.github_actions import GitHubDeployer

    legacy = settings.github
    if legacy is not None:  # DEPLOYER=github without a catalog: one repository, a workflow per service
        return GitHubDeployer(
            legacy.token.get_secret_value(), legacy.repository, dict(legacy.workflows),
            legacy.api_url, legacy.ref, legacy.poll_seconds, commit_input=legacy.commit_input,
        )
    assert settings.github_token is not None and service.github and service.workflow  # checked at start
    return GitHubDeployer(
        settings.github_token.get_secret_value(), service.github, {service.name: service.workflow},
        settings.github_api_url, settings.github_ref, settings.github_poll_seconds,
        commit_input=settings.github_commit_input.strip(),
    )


DEPLOYERS: dict[str, Build] = {
    "command": command,
    "github": github,
}


def problems(settings: Settings) -> list[str]:
    """A service whose deployer is no kind here: one line each (refused at start)."""
    return [
        f"{service.name}: deployer {service.deployer!r} is not one of {', '.join(sorted(DEPLOYERS))}"
        for service in settings.services() if service.deployer not in DEPLOYERS
    ]


def make_deployers(settings: Settings, live: LiveOutput | None = None) -> dict[str, Deployer]:
    """A deployer per service, by its kind. Services alike (one kind, repository, command and
    workflow) share one: backend and frontend without a catalog share a repository and a
    GitHub client. A service with a tag prefix sees only its own tags of the shared one.
    `live`: where a deploy command's output goes as it comes (the console's live tail)."""
    if wrong := problems(settings):
        raise ConfigError("\n".join(wrong))
    deployers: dict[str, Deployer] = {}
    built: dict[tuple[object, ...], Deployer] = {}
    for service in settings.services():
        key = (service.deployer, service.repo, service.command, service.github, service.workflow)
        if key not in built:
            made = DEPLOYERS[service.deployer](settings, service)
            if isinstance(made, CommandDeployer):
                made.running.live = live
            built[key] = made
        deployer = built[key]
        if service.tag_prefix:
            from bot.adapters.deployers.prefixed import Prefixed

            deployer = Prefixed(deployer, service.tag_prefix)
        deployers[service.name] = deployer
    return deployers
