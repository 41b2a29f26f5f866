"""The variables Settings reads, as flat fields (their names are the variables', matched
case-insensitively): each concern's reader (bot/config/channels.py, github.py, store.py,
services.py, access.py, ...) takes them from here; settings.py builds on them."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.config.settings_file import DeployerKind
from bot.core.deploy_command import DRY_RUN, command_argv
from bot.core.policy import parse_required
from bot.core.prompt import CONTEXT_BUDGET, MIN_BUDGET


class Fields(BaseSettings):
    # Inputs stay out of validation errors: they hold the secrets as plain text.
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", hide_input_in_errors=True)

    # A plain str (redis-py and the embedded server take it as it is; nothing logs it), but
    # its password is one of secrets() and the URL stays out of reprs.
    redis_url: str | None = Field(
        None, repr=False, description="unset: start an embedded Redis under DATA_DIR"
    )
    # Sentinel (instead of REDIS_URL) or Cluster (REDIS_URL names any node): see `redis`.
    redis_sentinels: str | None = Field(None, description="host:port,host:port of the Sentinels")
    redis_sentinel_master: str | None = Field(None, description="the master's name the Sentinels watch")
    redis_password: SecretStr | None = Field(None, description="the Redis servers' password (not the Sentinels')")
    redis_sentinel_password: SecretStr | None = Field(None, description="the Sentinels' own password")
    redis_cluster: bool = Field(False, description="REDIS_URL names a node of a Redis Cluster")
    redis_wait_ms: int = Field(
        500, ge=0, description="ms a write that must survive a failover waits for a replica; 0: never"
    )
    redis_web_connections: int = Field(
        200, ge=1, description="Redis connections a web process's requests share (past them, a request waits)"
    )
    data_dir: Path = Path(".deploybot")
    host: str = "0.0.0.0"
    port: int = 8000
    api_token: SecretStr | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"

    llm_provider: str | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_timeout: float = Field(60.0, gt=0)  # seconds for one model call, its retries included
    llm_api_key: SecretStr | None = None
    openai_api_key: SecretStr | None = None
    anthropic_api_key: SecretStr | None = None

    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = Field(None, description="set: Socket Mode instead of HTTP")
    slack_api_url: str = "https://slack.com/api/"

    smtp_host: str | None = None
    smtp_port: int = 587
    smtp_username: str | None = None
    smtp_password: SecretStr | None = None
    smtp_tls: Literal["none", "starttls", "tls"] = "starttls"
    email_from: str | None = None
    inbound_email_secret: SecretStr | None = None
    email_reply_secret: SecretStr | None = None
    email_allowed_senders: str = Field("", description="addresses and @domain entries")
    email_max_bytes: int = 1_000_000
    email_trusted_authserv_ids: str = Field(
        "", description="authserv-ids of the receiving mail servers whose Authentication-Results prove a sender",
    )
    email_mailbox_authenticated_domains: str = Field(
        "", description="domains whose every mail is sent by its mailbox's own signed-in user: a verdict there "
        "proves the person, elsewhere only the domain",
    )

    # Who may do what. Unset is not the same as a default: with nothing configured anyone
    # may approve (open mode); with anything configured nobody but those named may.
    deploybot_config: Path | None = Field(None, description="deploybot.toml elsewhere than ./deploybot.toml")
    environments: str | None = Field(None, description="unset: development,staging,production")
    protected_environments: str | None = Field(None, description="unset: production")
    approvers: str | None = Field(None, description="Slack user ids: U1,U2 or production:U1,U2;staging:*")
    approver_emails: str | None = Field(None, description="like APPROVERS: production:a@x.com,b@x.com")
    approver_must_differ: bool | None = Field(None, description="unset: false")
    approval_ttl: int = Field(3600, gt=0, description="seconds an approval request stays valid")
    approval_remind: int = Field(900, ge=0, description="seconds between reminders of a pending approval; 0: none")
    required_approvals: str | None = Field(None, description="approvals from different people: production:2")
    max_steps: int = 20
    context_budget: int = Field(
        CONTEXT_BUDGET, ge=MIN_BUDGET, description="estimated tokens of a thread the model reads (docs/context.md)"
    )
    worker_concurrency: int = Field(4, ge=1, description="agent runs at once in one process")
    worker_grace: float = Field(25.0, ge=0, description="seconds a stopping worker lets runs finish")
    deploy_lease: float = Field(
        60.0, ge=3, description="seconds a running deploy's worker may go unheard (cut off from Redis) before "
        "another worker reports the deploy's outcome unknown",
    )

    # Retention (docs/operations.md#retention; bot/runtime/gc.py).
    thread_retention: float = Field(
        90 * 86400, gt=0, description="seconds a finished thread is kept, then removed with its conversation keys"
    )
    deploy_history_retention: float | None = Field(
        None, gt=0, description="seconds a deploy's history record (and audit trail) is kept; unset: forever"
    )
    thread_compact_after: float = Field(
        86400, ge=0, description="seconds after which a finished thread is stored compressed; 0: never"
    )
    gc_every: float = Field(10.0, gt=0, description="seconds between the workers' retention passes")

    deployer: DeployerKind = Field("command", description="how backend and frontend deploy: command, github")
    github_token: SecretStr | None = None
    github_repository: str | None = Field(None, description="owner/name")
    github_api_url: str = "https://api.github.com"
    github_workflow_backend: str | None = None
    github_workflow_frontend: str | None = None
    github_ref: str = Field("main", description='a branch, or "{tag}" to dispatch on the tag itself')
    github_poll_seconds: float = Field(5.0, gt=0)
    github_commit_input: str = Field("commit", description="the workflow input given the approved commit")

    # Triggers and outgoing webhooks (docs/channels.md: GitHub webhooks, Outgoing webhooks).
    github_webhook_secret: SecretStr | None = Field(None, description="verifies POST /github/webhook")
    # deploybot as a GitHub App, the gate of GitHub environments (docs/github-gate.md).
    github_app_id: int | None = Field(None, description="the GitHub App's id (App settings, About)")
    github_app_private_key: SecretStr | None = Field(None, description="the App's private key (PEM)")
    github_app_private_key_file: Path | None = Field(None, description="a file holding the App's private key")
    github_gate_follow_seconds: float = Field(
        3600, gt=0, description="seconds an approved gated job is followed at most; then its outcome is unknown"
    )
    notify_webhook_url: str = Field("", description="URLs, comma-separated, POSTed every notable event")
    notify_webhook_secret: SecretStr | None = Field(None, description="signs what NOTIFY_WEBHOOK_URL gets")

    git_repo: Path = Path(".")
    deploy_command: str = DRY_RUN
    deploy_timeout: float = 1800
    deploy_env_passthrough: str = Field(
        "", description="variables the deploy command gets from the bot's environment, comma-separated"
    )

    # Signing in to the web (personal tokens need none of these).
    session_secret: SecretStr | None = Field(None, description="signs session cookies; unset: kept under DATA_DIR")
    session_ttl: int = Field(43200, ge=60, description="seconds a web session lasts")
    public_url: str | None = Field(None, description="the bot's address in sign-in links; unset: http://HOST:PORT")
    console_streams_per_person: int = Field(5, ge=1, description="live console streams one person may hold at once")
    console_streams: int = Field(200, ge=1, description="live console streams one web process serves at once")
    allowed_hosts: str = Field(
        "", description="more names the bot answers to (Host), comma-separated; loopback and PUBLIC_URL's host always"
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("required_approvals")
    @classmethod
    def _required(cls, value: str | None) -> str | None:
        if value is not None:
            parse_required(value)
        return value

    @field_validator("deploy_command")
    @classmethod
    def _command(cls, value: str) -> str:
        command_argv(value)
        return value
