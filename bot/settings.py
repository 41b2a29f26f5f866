"""The one place that reads the environment (and an optional .env file)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.deployers.command import DRY_RUN
from bot.policy import Policy, parse_approvers

DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}


class ConfigError(ValueError):
    pass


def _words(text: str) -> frozenset[str]:
    return frozenset(w.strip() for w in text.split(",") if w.strip())


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    redis_url: str | None = Field(None, description="unset: start an embedded Redis under DATA_DIR")
    data_dir: Path = Path(".deploybot")
    host: str = "0.0.0.0"
    port: int = 8000
    api_token: str | None = None
    log_level: str = "INFO"

    llm_provider: str | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    openai_api_key: str | None = None
    anthropic_api_key: str | None = None

    slack_bot_token: str | None = None
    slack_signing_secret: str | None = None
    slack_app_token: str | None = Field(None, description="set: Socket Mode instead of HTTP")
    slack_api_url: str = "https://slack.com/api/"

    smtp_host: str | None = None
    smtp_port: int = 587
    smtp_username: str | None = None
    smtp_password: str | None = None
    smtp_tls: Literal["none", "starttls", "tls"] = "starttls"
    email_from: str | None = None
    inbound_email_secret: str | None = None
    email_reply_secret: str | None = None
    email_allowed_senders: str = Field("", description="addresses and @domain entries")
    approver_emails: str = Field("", description="like APPROVERS: production:a@x.com,b@x.com")
    email_max_bytes: int = 1_000_000

    environments: str = "development,staging,production"
    protected_environments: str = "production"
    approvers: str = "*"
    approver_must_differ: bool = False
    approval_ttl: int = Field(3600, description="seconds an approval request stays valid")
    max_steps: int = 20
    worker_concurrency: int = Field(4, ge=1, description="agent runs at once in one process")
    worker_grace: float = Field(25.0, ge=0, description="seconds a stopping worker lets runs finish")

    deployer: Literal["command", "github"] = "command"
    github_token: str | None = None
    github_repository: str | None = Field(None, description="owner/name")
    github_api_url: str = "https://api.github.com"
    github_workflow_backend: str | None = None
    github_workflow_frontend: str | None = None
    github_ref: str = "main"
    github_poll_seconds: float = 5.0

    git_repo: Path = Path(".")
    deploy_command: str = DRY_RUN
    deploy_timeout: float = 1800

    def bind_host(self) -> str:
        """Without API_TOKEN the approval endpoints must not be reachable from other hosts."""
        return self.host if self.api_token else "127.0.0.1"

    def policy(self) -> Policy:
        protected = _words(self.protected_environments)
        chat, mail = parse_approvers(self.approvers), parse_approvers(self.approver_emails.lower())
        none: frozenset[str] = frozenset()
        # Per environment, each list falls back to its own "*" entry; email approvers add to
        # the chat approvers (addresses compare lower-cased, as senders are read).
        approvers = {
            env: chat.get(env, chat.get("*", none)) | mail.get(env, mail.get("*", none))
            for env in set(chat) | set(mail)
        }
        return Policy(
            environments=_words(self.environments) | protected,
            protected=protected,
            approvers=approvers,
            approver_must_differ=self.approver_must_differ,
            approval_ttl=timedelta(seconds=self.approval_ttl),
            max_steps=self.max_steps,
        )

    def llm(self) -> tuple[str, str, str, str | None] | None:
        """(provider, model, api_key, base_url), or None when no LLM is configured."""
        provider = self.llm_provider or (
            "openai-generic" if self.llm_base_url
            else "openai" if self.openai_api_key
            else "anthropic" if self.anthropic_api_key
            else None
        )
        if provider is None:
            return None
        key = self.llm_api_key or {
            "openai": self.openai_api_key, "anthropic": self.anthropic_api_key
        }.get(provider)
        model = self.llm_model or DEFAULT_MODELS.get(provider)
        if provider == "openai-generic" and not self.llm_base_url:
            raise ConfigError("LLM_PROVIDER=openai-generic needs LLM_BASE_URL")
        if not model:
            raise ConfigError(f"LLM_PROVIDER={provider} needs LLM_MODEL")
        if not key and provider != "openai-generic":
            raise ConfigError(f"LLM_PROVIDER={provider} needs LLM_API_KEY")
        return provider, model, key or "none", self.llm_base_url

    def github(self) -> dict[str, object] | None:
        """GitHubDeployer arguments when DEPLOYER=github; a missing piece is an error at start."""
        if self.deployer != "github":
            return None
        missing = [
            name for name, value in (
                ("GITHUB_TOKEN", self.github_token), ("GITHUB_REPOSITORY", self.github_repository),
            ) if not value
        ]
        workflows = {
            service: wf for service, wf in (
                ("backend", self.github_workflow_backend), ("frontend", self.github_workflow_frontend),
            ) if wf
        }
        if not workflows:
            missing.append("GITHUB_WORKFLOW_BACKEND or GITHUB_WORKFLOW_FRONTEND")
        if missing:
            raise ConfigError(f"DEPLOYER=github needs {', '.join(missing)}")
        return {
            "token": self.github_token, "repository": self.github_repository, "workflows": workflows,
            "api_url": self.github_api_url, "ref": self.github_ref, "poll_seconds": self.github_poll_seconds,
        }

    def email(self) -> bool:
        """Whether the email channel is on; half a configuration is an error."""
        if not (self.smtp_host or self.inbound_email_secret):
            return False
        missing = [
            name for name, value in (
                ("SMTP_HOST", self.smtp_host), ("EMAIL_FROM", self.email_from),
                ("INBOUND_EMAIL_SECRET", self.inbound_email_secret),
                ("EMAIL_REPLY_SECRET", self.email_reply_secret),
            ) if not value
        ]
        if missing:
            raise ConfigError(f"the email channel needs {', '.join(missing)}")
        return True

    def slack(self) -> bool:
        """Whether the Slack channel is on; half a configuration is an error, not a silent off."""
        if not self.slack_bot_token:
            return False
        if not self.slack_signing_secret:
            raise ConfigError("SLACK_BOT_TOKEN is set but SLACK_SIGNING_SECRET is not")
        return True

    def secrets(self) -> tuple[str, ...]:
        """Values that must never reach the model or a transcript."""
        values = (
            self.api_token, self.llm_api_key, self.openai_api_key, self.anthropic_api_key,
            self.slack_bot_token, self.slack_signing_secret, self.slack_app_token, self.github_token,
            self.smtp_password, self.inbound_email_secret, self.email_reply_secret,
        )
        return tuple(v for v in values if v)
