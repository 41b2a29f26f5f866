"""Every deploybot.toml example of the README and docs/*.md (their fenced ```toml blocks)
loads through the real settings loader, so the docs cannot drift from what starts. Each
example shows one part of a file: what it leaves out ([people.*], [groups], [environments.*],
[services.*]) is taken from the People and approvers example and the Services example
(docs/people-and-approvals.md), the file the others build on."""

from __future__ import annotations

import re
import textwrap

import pytest

from bot.config.settings import Settings, config_problems
from tests import ROOT

# docs/extending.md registers a deployer kind of its own first: tests/wiring/test_extending.py
# checks its blocks against the code it shows, with that kind registered.
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "extending.md")]
BLOCK = re.compile(r"^(?P<indent>[ \t]*)```toml\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
def _app_key() -> str:
    """A GitHub App's private key (PEM) for the examples that gate GitHub environments."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


# What every example may need switched on: the channels notify targets name, GitHub for
# services and webhooks. Values are placeholders; nothing is contacted.
CHANNELS = {
    "GITHUB_TOKEN": "ghp-placeholder", "GITHUB_WEBHOOK_SECRET": "placeholder",
    "SLACK_BOT_TOKEN": "xoxb-placeholder", "SLACK_SIGNING_SECRET": "placeholder",
    "SMTP_HOST": "mail.example.com", "EMAIL_FROM": "bot@example.com",
    "INBOUND_EMAIL_SECRET": "placeholder", "EMAIL_REPLY_SECRET": "placeholder",
    "GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY": _app_key(),  # [[github_environments]]
}


def examples() -> list[str]:
    return [textwrap.dedent(m["body"]) for doc in DOCS for m in BLOCK.finditer(doc.read_text())]


def tables(text: str) -> list[str]:
    """The tables of `text`, each with its header, as written."""
    return [c for c in re.split(r"(?m)^(?=\[)", text) if c.startswith("[")]


def top_key(table: str) -> str:
    return table.strip("[").split("]")[0].split(".")[0].strip()


def completed(example: str) -> str:
    """`example` with the tables of every kind it does not write itself, from the People
    example and the Services example's [services.*] (the first example with services). Keys
    the example writes before its first table (`promotion = [...]`) stay at the top level."""
    [people] = [e for e in examples() if "[people." in e]
    # The Services example; the verification example (docs/configuration.md) and the code links
    # one (docs/console.md) write their own service.
    services = next(e for e in examples() if "[services." in e and ".verify." not in e and ".links]" not in e)
    base = tables(people) + [t for t in tables(services) if top_key(t) == "services"]
    own = {top_key(t) for t in tables(example)}
    first = re.search(r"(?m)^\[", example)
    lead, rest = (example[: first.start()], example[first.start() :]) if first else (example, "")
    return lead + "".join(t for t in base if top_key(t) not in own) + rest


def test_the_docs_have_the_examples_this_test_loads():
    assert len(examples()) >= 5
    assert any("[services." in e for e in examples())


@pytest.mark.parametrize("example", examples(), ids=lambda e: e.strip().splitlines()[0][:40])
def test_every_toml_example_of_the_docs_loads(example, tmp_path, monkeypatch):
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    for name, value in CHANNELS.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "deploybot.toml").write_text(completed(example))
    monkeypatch.chdir(tmp_path)
    try:
        settings = Settings(_env_file=None)
    except ValueError as e:
        pytest.fail("\n".join(config_problems(e)))  # type: ignore[arg-type]
    assert settings.config_file == tmp_path / "deploybot.toml"


def refusal(text: str, tmp_path, monkeypatch) -> list[str]:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    (tmp_path / "deploybot.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as refused:
        Settings(_env_file=None)
    return config_problems(refused.value)  # type: ignore[arg-type]


def test_a_service_in_an_undeclared_environment_is_told_how_to_declare_it(tmp_path, monkeypatch):
    text = '[services.api]\nenvironments = ["staging", "production"]\n\n' \
           '[environments.production]\nprotected = false\n'
    assert refusal(text, tmp_path, monkeypatch) == [
        "services.api.environments[0]: unknown environment 'staging' (known: production); "
        "declare it with [environments.staging] in deploybot.toml",
    ]


def test_without_environments_in_the_file_the_refusal_names_environments_too(tmp_path, monkeypatch):
    [problem] = refusal('[services.api]\nenvironments = ["qa"]\n', tmp_path, monkeypatch)
    assert problem.startswith("services.api.environments[0]: unknown environment 'qa' (known: ")
    assert problem.endswith("; list it in ENVIRONMENTS or declare it with [environments.qa] in deploybot.toml")
