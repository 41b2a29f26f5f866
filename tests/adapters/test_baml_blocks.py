"""The `test` blocks in baml_src/ run with `baml-cli test` against the local model server:
one per intent, and their assertions really check the parsed step."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bot.testing.fake_llm import FakeLlm
from tests import ROOT

pytestmark = [pytest.mark.redis, pytest.mark.processes, pytest.mark.network]

BAML_CLI = Path(sys.executable).parent / "baml-cli"


def competent(prompt: str) -> str:
    """Stands in for a model that follows the prompt's rules, by reading the thread."""
    thread = prompt.split("oldest first:")[1].split("What is the next step?")[0]
    if "<deploy_result" in thread:
        return '{"intent": "done_for_now", "message": "Deployed."}'
    if "<list_git_tags_result" in thread:
        service = re.search(r'<list_git_tags_result step="\w+" service="([\w-]+)"', thread)[1]
        environment = "staging" if "staging" in thread else "production"
        tag = re.search(r"(v\d[\d.]*) \w+ \d{4}-", thread)[1]  # the newest listed tag
        return f'{{"intent": "deploy", "service": "{service}", "tag": "{tag}", "environment": "{environment}"}}'
    if "latest" not in thread and not re.search(r"v\d", thread):
        return '{"intent": "request_more_information", "message": "Which service and environment?"}'
    return '{"intent": "list_git_tags"}'


def run_blocks(responder) -> tuple[int, str]:
    llm = FakeLlm(default=responder).start()
    try:
        env = {**os.environ, "LLM_BASE_URL": llm.base_url, "LLM_MODEL": "fake", "LLM_API_KEY": "k"}
        out = subprocess.run(
            [str(BAML_CLI), "test", "--from", str(ROOT / "baml_src")],
            env=env, capture_output=True, text=True, timeout=120,
            cwd=tempfile.gettempdir(),  # so a developer's .env cannot point it at a real model
        )
        return out.returncode, out.stdout + out.stderr
    finally:
        llm.stop()


def test_one_block_per_intent_and_all_pass_for_a_competent_model():
    code, output = run_blocks(competent)
    assert code == 0, output
    passed = set(re.findall(r"PASSED\s+DetermineNextStep::(\w+)", output))
    assert passed == {"asks_for_tags_first", "deploys_latest_tag", "deploys_another_service",
                      "asks_when_ambiguous", "done_after_deploy"}


def test_a_service_outside_the_catalog_fails_the_block():
    """The test blocks' catalog is api, web and worker: a model naming another service does
    not parse, so the block that expects a deploy fails."""
    def wrong_service(prompt: str) -> str:
        if "<list_git_tags_result" in prompt:
            return '{"intent": "deploy", "service": "backend", "tag": "v1.2.3", "environment": "production"}'
        return competent(prompt)

    code, output = run_blocks(wrong_service)
    assert code != 0
    passed = set(re.findall(r"PASSED\s+DetermineNextStep::(\w+)", output))
    assert "deploys_latest_tag" not in passed and "deploys_another_service" not in passed
    assert "asks_for_tags_first" in passed


def test_the_assertions_catch_a_model_that_always_lists_tags():
    code, output = run_blocks(lambda prompt: '{"intent": "list_git_tags"}')
    assert code != 0
    assert re.findall(r"PASSED\s+DetermineNextStep::(\w+)", output) == ["asks_for_tags_first"]
