# Two commands a new user needs:  `make run`  and  `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@# the console's browser tests drive this Chromium (Playwright downloads none)
	@test -x /usr/bin/chromium || (apt-get install -y -qq chromium > /dev/null 2>&1 || (apt-get update -qq > /dev/null && apt-get install -y -qq chromium > /dev/null)) || echo "chromium is missing (apt-get install chromium): the console's browser tests need it"
	touch $@

.PHONY: install run test unit lint types bench chaos baml
install: $(BIN)/.installed

run: install  ## set up and start the bot on http://127.0.0.1:8000 (no secrets needed)
	$(BIN)/python -m bot serve

test: install lint types  ## lint, types, and the whole test suite (unit layer first: it fails fastest)
	$(BIN)/baml-cli generate --from baml_src > /dev/null
	@test -z "$$(git status --porcelain -- bot/baml_client)" || (git status --short -- bot/baml_client; echo "bot/baml_client differs from baml_src: run make baml and commit"; exit 1)
	$(BIN)/python -m pytest -q tests/unit tests/contract
	$(BIN)/python -m pytest -q --ignore=tests/unit --ignore=tests/contract

unit: install  ## the fast unit layer alone (in-memory fakes, seconds)
	$(BIN)/python -m pytest -q tests/unit

lint: install  ## ruff: errors, imports, bugbear, pyupgrade, async pitfalls
	$(BIN)/ruff check bot tests bench
	$(BIN)/lint-imports --no-cache > /dev/null || $(BIN)/lint-imports --no-cache

types: install  ## mypy: strict on the pure core, checked everywhere else
	$(BIN)/mypy bot

bench: install  ## print the benchmark figures recorded in docs/benchmarks.md
	$(BIN)/python bench/step_overhead.py
	$(BIN)/python bench/slack_ack.py
	$(BIN)/python bench/workers.py
	$(BIN)/python bench/growth.py
	$(BIN)/python bench/mcp_roundtrip.py

chaos: install  ## the long chaos run: 200 worker kills and a Redis restart under load
	$(BIN)/python -m bot.testing.chaos

baml: install  ## regenerate bot/baml_client after editing baml_src/
	$(BIN)/baml-cli generate --from baml_src
