"""GitHub's names in the Inbox: the scopes webhook deliveries are deduplicated in, the gated
deployments and their answers, and the GitHub deployment of each deploy (Inbox.receive,
Inbox.link/lookup). The Inbox puts them inside its own keys (bot/adapters/redis/keys.py).
Changing any string here orphans data already stored under the old one
(tests/adapters/channels/test_stored_names.py pins each)."""

from __future__ import annotations


def github_deployment(deploy: str) -> str:
    """A deploy step (`<thread id>-<step id>`, its deploy id) -> the id of the GitHub
    deployment that shows it on GitHub's Environments page."""
    return f"github:deployment:{deploy}"


GITHUB_DELIVERIES = "github:deliveries"
"""The scope every GitHub webhook delivery is deduplicated in (by X-GitHub-Delivery)."""


GITHUB_BODIES = "github:bodies"
"""The scope every GitHub webhook delivery is also deduplicated in by the SHA-256 of its body:
the signature covers only the body, so a captured delivery replayed under a new
X-GitHub-Delivery is still the same delivery."""


def github_gate(thread_id: str) -> str:
    """A thread a `deployment_protection_rule` delivery started -> what GitHub asked (JSON:
    the callback, the installation, the run): the thread is a gated deployment."""
    return f"github:gate:{thread_id}"


def github_gate_answer(thread_id: str) -> str:
    """A gated deployment -> the one answer it gets ("approved" or "rejected"), bound before
    it is sent: whichever decision binds first is the only one ever sent."""
    return f"github:gate:answer:{thread_id}"


def github_gate_sent(thread_id: str) -> str:
    """A gated deployment -> set once GitHub took its answer: a resumed run never sends twice."""
    return f"github:gate:sent:{thread_id}"


def github_gate_commit(service: str, commit: str) -> str:
    """A service's commit a gated deployment asks for -> its thread: the only commits the
    gate lets a deploy's tag be (they resolve to themselves)."""
    return f"github:gate:commit:{service}:{commit}"
