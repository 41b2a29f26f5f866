"""GitHub's settings: deploying by its workflows (DEPLOYER=github), and deploybot as a GitHub
App, the gate of GitHub environments (docs/github-gate.md). `s`: the Settings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, SecretStr

from bot.config.fields import Fields
from bot.config.reading import ConfigError, require
from bot.core.gate import GateRule


class GitHubSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    token: SecretStr
    repository: str  # owner/name
    workflows: dict[str, str]  # service -> workflow file; at least one
    api_url: str = "https://api.github.com"
    ref: str = "main"  # "{tag}": dispatch on the tag itself
    poll_seconds: float = 5.0
    commit_input: str = "commit"  # "": the workflow takes no commit input


class GitHubAppSettings(BaseModel):
    """deploybot as a GitHub App: the gate of GitHub environments (docs/github-gate.md)."""

    model_config = ConfigDict(frozen=True)

    app_id: int
    private_key: SecretStr  # PEM, checked at start to be an RSA private key
    api_url: str = "https://api.github.com"
    rules: tuple[GateRule, ...] = ()  # [[github_environments]]



def read_github(s: Fields) -> GitHubSettings | None:
    if s.deployer != "github":
        return None
    workflows = {
        service: wf for service, wf in (
            ("backend", s.github_workflow_backend), ("frontend", s.github_workflow_frontend),
        ) if wf
    }
    require("DEPLOYER=github", (
        ("GITHUB_TOKEN", s.github_token), ("GITHUB_REPOSITORY", s.github_repository),
        ("GITHUB_WORKFLOW_BACKEND or GITHUB_WORKFLOW_FRONTEND", workflows),
    ))
    return GitHubSettings.model_validate({
        "token": s.github_token, "repository": s.github_repository, "workflows": workflows,
        "api_url": s.github_api_url, "ref": s.github_ref, "poll_seconds": s.github_poll_seconds,
        "commit_input": s.github_commit_input.strip(),
    })


def read_github_app(s: Fields, rules: tuple[GateRule, ...]) -> GitHubAppSettings | None:
    key_given = s.github_app_private_key is not None or s.github_app_private_key_file is not None
    if s.github_app_id is None:
        if rules or key_given:
            raise ConfigError("[[github_environments]] and GITHUB_APP_PRIVATE_KEY need GITHUB_APP_ID")
        return None
    if s.github_app_private_key is not None and s.github_app_private_key_file is not None:
        raise ConfigError("GITHUB_APP_PRIVATE_KEY and GITHUB_APP_PRIVATE_KEY_FILE are both set: set one of them")
    if s.github_app_private_key_file is not None:
        try:
            pem = s.github_app_private_key_file.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"GITHUB_APP_PRIVATE_KEY_FILE: cannot read {s.github_app_private_key_file}: "
                              f"{e.__class__.__name__}") from None
    elif s.github_app_private_key is not None:
        pem = s.github_app_private_key.get_secret_value().replace("\\n", "\n")  # one line in a .env
    else:
        raise ConfigError("GITHUB_APP_ID needs GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_FILE")
    if not s.github_webhook_secret:
        raise ConfigError("GITHUB_APP_ID needs GITHUB_WEBHOOK_SECRET, to verify what GitHub sends")
    _check_rsa_key(pem)
    return GitHubAppSettings(app_id=s.github_app_id, private_key=SecretStr(pem), api_url=s.github_api_url,
                             rules=rules)


def _check_rsa_key(pem: str) -> None:
    """A clear error at start for a key that cannot sign the app's RS256 JWT (never its text)."""
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.strip().encode(), password=None)
    except (ValueError, TypeError):
        raise ConfigError("the GitHub App's private key is not a PEM private key without a password "
                          "(download it from the App's settings: Private keys)") from None
    if not isinstance(key, RSAPrivateKey):
        raise ConfigError("the GitHub App's private key is not an RSA key (GitHub signs apps' JWTs with RS256)")

