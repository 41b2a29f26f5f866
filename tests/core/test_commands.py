from __future__ import annotations

import pytest

from bot.core.catalog import Catalog, Service
from bot.core.commands import APPROVE_WORDS, deploy_anyway, is_approval, parse
from bot.core.events import DeployService, ListGitTags, LockEnvironment, RollBack, UnlockEnvironment

CATALOG = Catalog.of([Service("api"), Service("web", tag_prefix="web/"), Service("billing-worker")])


@pytest.mark.parametrize(
    "text, service, tag, env",
    [
        ("deploy backend v1.2.3 to production", "backend", "v1.2.3", "production"),
        ("@deploybot deploy the frontend v2.0.0 to staging please.", "frontend", "v2.0.0", "staging"),
        ("<@U0123ABC> Deploy Backend v1.2.3 on Production!", "backend", "v1.2.3", "production"),
    ],
)
def test_exact_deploys(text, service, tag, env):
    step = parse(text)
    assert isinstance(step, DeployService)
    assert (step.service, step.tag, step.environment, step.source) == (service, tag, env, "command")


@pytest.mark.parametrize(
    "text, service, tag, env",
    [
        ("deploy api v1.2.3 to production", "api", "v1.2.3", "production"),
        ("deploy API v1.2.3 to production", "api", "v1.2.3", "production"),  # as the catalog spells it
        ("deploy web v2.0.0 to staging", "web", "web/v2.0.0", "staging"),  # a monorepo's tag prefix
        ("deploy web web/v2.0.0 to staging", "web", "web/v2.0.0", "staging"),
        ("deploy billing-worker v3 into development", "billing-worker", "v3", "development"),
    ],
)
def test_exact_deploys_of_a_catalog(text, service, tag, env):
    step = parse(text, CATALOG)
    assert isinstance(step, DeployService) and (step.service, step.tag, step.environment) == (service, tag, env)


@pytest.mark.parametrize("text", [
    "deploy backend v1 to production",  # not in this catalog
    "deploy the latest api to production",  # "latest" is no service: the model's
    "list tags for payments",
])
def test_a_service_outside_the_catalog_is_no_command(text):
    assert parse(text, CATALOG) is None


def test_services_in_tags_rollback_and_locks():
    assert parse("list tags for web", CATALOG).service == "web"
    assert parse("tags", CATALOG).service is None
    rollback = parse("@deploybot roll back api in production", CATALOG)
    assert isinstance(rollback, RollBack) and (rollback.service, rollback.environment) == ("api", "production")
    assert parse("rollback Web on staging", CATALOG).service == "web"
    lock = parse("lock api in production: bad migration", CATALOG)
    assert isinstance(lock, LockEnvironment) and (lock.service, lock.reason) == ("api", "bad migration")
    assert parse("lock production: freeze", CATALOG).service == ""
    unlock = parse("unlock web in staging", CATALOG)
    assert isinstance(unlock, UnlockEnvironment) and (unlock.service, unlock.environment) == ("web", "staging")


def test_deploy_anyway_carries_its_reason():
    assert deploy_anyway("@deploybot deploy anyway: the flaky e2e suite,\n known issue") == (
        "the flaky e2e suite, known issue")
    assert deploy_anyway("deploy anyway") is None  # a reason is required
    assert deploy_anyway("deploy api v1 to production") is None


@pytest.mark.parametrize("text", ["list tags", "tags", "show the git tags", "<@U1> list git tags"])
def test_list_tags(text):
    assert isinstance(parse(text), ListGitTags)


@pytest.mark.parametrize(
    "text",
    ["deploy the latest backend to production", "deploy backend v1 to production and then staging", "approve", ""],
)
def test_free_text_is_not_a_command(text):
    assert parse(text) is None


@pytest.mark.parametrize("text", [
    "y", "Yes!", "approve", "Approved.", "LGTM", "ship it", "Ship  it!\nthanks", "  approve!!.\n\nthanks!",
    "ＡＰＰＲＯＶＥ", "lgtm！",  # NFKC: full-width letters and "!" are the same words
])
def test_approval_words(text):
    assert is_approval(text)


@pytest.mark.parametrize("text", [
    "yes, but after 5pm", "ship it tomorrow", "no", "", "please approve", "approve :)", "approve, thanks",
    "approve\u200b",  # an invisible character is not nothing
    # a question, on the first line or any later one, in any script: never an approval
    "approve\nbut is the migration done?", "approve❓", "approve﹖", "yes︖", "lgtm ❔", "approve\nok\u037e",
    "approve\n\nwait⁈", "ship it\nreally‽", "approve\n¿seguro", "yes\nهل انتهى الترحيل؟",
])
def test_anything_else_is_not_an_approval(text):
    assert not is_approval(text)


@pytest.mark.parametrize("word", sorted(APPROVE_WORDS))
def test_every_approval_word_approves_and_asked_does_not(word):
    assert is_approval(word) and is_approval(f"{word.upper()}!") and is_approval(f"{word}\nthanks")
    assert not is_approval(f"{word}?") and not is_approval(f"{word}\nsure?") and not is_approval(f"{word} now")


def test_one_set_of_approval_words_for_every_channel():
    assert {"y", "yes", "approve", "approved", "lgtm", "ship it", "confirm", "confirmed"} == APPROVE_WORDS
