# Two commands a new user needs:  `make run`  and  `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# pytest-xdist workers for make test's tiers (JOBS=1: one process)
JOBS ?= auto
# the integration tiers wait on servers more than they compute: more workers than cores
IJOBS ?= 3
# what a test needs beyond Python is its marker (tests/needs.py): the fast layer needs none of them
NEEDS := redis or browser or prometheus or processes or network
# A warm run reuses the compiled (and pytest's assert-rewritten) modules: a shell that sets
# PYTHONDONTWRITEBYTECODE would make every run compile the whole tree again (seconds each time).
unexport PYTHONDONTWRITEBYTECODE

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@# the console's browser tests drive this Chromium (Playwright downloads none)
	@test -x /usr/bin/chromium || (apt-get install -y -qq chromium > /dev/null 2>&1 || (apt-get update -qq > /dev/null && apt-get install -y -qq chromium > /dev/null)) || echo "chromium is missing (apt-get install chromium): the console's browser tests need it"
	@# the deploy verification and /metrics tests use a real Prometheus server (Debian's package)
	@test -x /usr/bin/prometheus || (apt-get install -y -qq prometheus > /dev/null 2>&1 || (apt-get update -qq > /dev/null && apt-get install -y -qq prometheus > /dev/null)) || echo "prometheus is missing (apt-get install prometheus): the verification and /metrics tests need it"
	@# the clock-skew tests run bot processes with their clock moved (libfaketime)
	@test -x /usr/bin/faketime || (apt-get install -y -qq faketime > /dev/null 2>&1 || (apt-get update -qq > /dev/null && apt-get install -y -qq faketime > /dev/null)) || echo "faketime is missing (apt-get install faketime): the clock-skew tests need it"
	touch $@

.PHONY: install run test static baml-check unit-tiers integration-tiers unit lint types bench bench-quick chaos baml
install: $(BIN)/.installed

run: install  ## set up and start the bot on http://127.0.0.1:8000 (no secrets needed)
	$(BIN)/python -m bot serve

test: install  ## lint, types, the whole suite (unit and contract first: they fail fastest), quick benchmarks
	@# the static checks beside the unit and contract tiers, then the integration tiers beside the
	@# quick benchmarks: both pairs wait on sockets and subprocesses more than they use the cores
	$(MAKE) --no-print-directory -j3 --output-sync=target static unit-tiers
	$(MAKE) --no-print-directory -j2 --output-sync=target integration-tiers bench-quick

static: lint types baml-check

baml-check: install
	$(BIN)/baml-cli generate --from baml_src > /dev/null
	@test -z "$$(git status --porcelain -- bot/baml_client)" || (git status --short -- bot/baml_client; echo "bot/baml_client differs from baml_src: run make baml and commit"; exit 1)

unit-tiers: install baml-check  ## the fast layer (the in-memory half of the port contracts included)
	$(BIN)/python -m pytest -q -n $(JOBS) -m "not ($(NEEDS))" tests

integration-tiers: install  ## a test file stays on one worker (module-scoped servers, the console's browser)
	$(BIN)/python -m pytest -q -n $(IJOBS) --dist loadfile -m "$(NEEDS)" tests

unit: install  ## every test that needs no server: no Redis, no subprocess, no socket (in-memory fakes)
	$(BIN)/python -m pytest -q -m "not ($(NEEDS))" tests

lint: install  ## ruff: errors, imports, bugbear, pyupgrade, async pitfalls
	$(BIN)/ruff check bot tests bench
	$(BIN)/lint-imports --no-cache > /dev/null || $(BIN)/lint-imports --no-cache

types: install  ## mypy: strict on the pure core, checked everywhere else
	$(BIN)/mypy bot

bench: install  ## every benchmark at full size, as docs/benchmarks.md records them (slow)
	$(BIN)/python bench/step_overhead.py
	$(BIN)/python bench/slack_ack.py
	$(BIN)/python bench/workers.py
	$(BIN)/python bench/growth.py
	$(BIN)/python bench/console_render.py
	$(BIN)/python bench/context_tokens.py
	$(BIN)/python bench/hostile.py
	$(BIN)/python bench/mcp_roundtrip.py
	$(BIN)/python bench/delivery_metrics.py
	$(BIN)/python bench/verify_rollback.py
	$(BIN)/python bench/gate_latency.py
	$(BIN)/python bench/run_cost.py
	$(BIN)/python bench/web_load.py

bench-quick: install  ## every benchmark in quick mode (small counts, seconds each): run by make test, so none rots
	$(BIN)/python bench/step_overhead.py --quick
	$(BIN)/python bench/slack_ack.py --quick
	$(BIN)/python bench/workers.py --quick
	$(BIN)/python bench/growth.py --quick
	$(BIN)/python bench/console_render.py --quick
	$(BIN)/python bench/context_tokens.py --quick
	$(BIN)/python bench/hostile.py --quick
	$(BIN)/python bench/mcp_roundtrip.py --quick
	$(BIN)/python bench/delivery_metrics.py --quick
	$(BIN)/python bench/verify_rollback.py --quick
	$(BIN)/python bench/gate_latency.py --quick
	$(BIN)/python bench/run_cost.py --quick
	$(BIN)/python bench/web_load.py --quick

chaos: install  ## the long chaos run: 200 worker kills and a Redis restart under load
	$(BIN)/python -m bot.testing.chaos

baml: install  ## regenerate bot/baml_client after editing baml_src/
	$(BIN)/baml-cli generate --from baml_src
