# Everything runs in .venv, created and filled from pyproject.toml on first use: the project
# alone for `make demo`, with its dev extra for everything else. `make test-lowest` has a venv
# of its own, .venv-lowest, with the lowest versions the project allows.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BASE := $(VENV)/.ready-base
READY := $(VENV)/.ready
LOWEST := .venv-lowest
LOWEST_READY := $(LOWEST)/.ready
CORPUS ?= ../shared/corpus/*.json*

.PHONY: demo test test-lowest lint bench evaluate lab mutate clean notebooks docs

# A venv belongs to the interpreter that built it. One whose python is not $(PYTHON)'s (another
# version, another installation, or one that is gone) is out of date whatever its time stamps
# say, and is rebuilt from nothing instead of failing half-way.
python_id = $(shell $(1) -c 'import sys; print(sys.version.split()[0], sys.base_prefix)' 2>/dev/null)
WANT := $(call python_id,$(PYTHON))
ifneq ($(call python_id,$(BIN)/python),$(WANT))
.PHONY: $(BASE) $(READY)
CLEAR := --clear
endif
ifneq ($(call python_id,$(LOWEST)/bin/python),$(WANT))
.PHONY: $(LOWEST_READY)
endif

NEED_PYTHON := import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed; found " + sys.version.split()[0])

$(BASE): pyproject.toml
	@$(PYTHON) -c '$(NEED_PYTHON)'
	$(PYTHON) -m venv $(CLEAR) $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@touch $(BASE)

$(READY): $(BASE)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(READY)

# The floors: each runtime dependency of pyproject.toml pinned to its lower bound
# ("langgraph>=1.2.12,<2" gives "langgraph==1.2.12"); a dependency without one is an error.
define FLOORS_PY
import re, sys, tomllib
for dep in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]:
    floor = re.fullmatch(r"([A-Za-z0-9._-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(,[^;]*)?", dep)
    if floor is None:
        sys.exit(f"pyproject.toml: {dep!r} has no lower bound that make test-lowest can test")
    print(f"{floor[1]}=={floor[2]}")
endef
export FLOORS_PY

# .venv-lowest, always from nothing (uv makes that a matter of seconds): the project with the
# floors as constraints, and the test extra. This is uv's lowest-direct resolution made exact:
# the direct dependencies at their floors, everything they pull in at its newest. A floor that
# cannot be installed (one below what another dependency needs) fails here with the reason,
# where lowest-direct would lift it silently. The test tools are the newest their ranges allow:
# the promise under test is the one to users, not the test tools' floors. No optional peer is
# installed. uv itself lives in the venv; nothing in it depends on it.
$(LOWEST_READY): pyproject.toml Makefile
	@$(PYTHON) -c '$(NEED_PYTHON)'
	rm -rf $(LOWEST)
	$(PYTHON) -m venv $(LOWEST)
	$(LOWEST)/bin/python -m pip install --quiet 'uv>=0.13,<0.14'
	$(LOWEST)/bin/python -c "$$FLOORS_PY" > $(LOWEST)/floors.txt
	$(LOWEST)/bin/uv pip install --quiet --python $(LOWEST)/bin/python \
		--constraint $(LOWEST)/floors.txt -e '.[test]'
	@touch $(LOWEST_READY)

# The demo needs nothing beyond the project itself.
demo: $(BASE)
	$(BIN)/python -m repeat_reminder_langchain demo $(ARGS)

lint: $(READY)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/mypy evaluation
	$(BIN)/python scripts/mutation_report.py --check-list

test: lint
	scripts/with-postgres $(BIN)/python -m pytest --cov --cov-report=term-missing

# The tests that need no optional peer, on the floors. A module that needs a peer starts with
# pytest.importorskip, and REPEAT_REMINDER_PEERS=optional lets it skip (tests/conftest.py).
# No coverage here (pytest-cov is not installed): `make test` is the run that enforces it.
test-lowest: $(LOWEST_READY)
	@echo "Lowest versions: $$(tr '\n' ' ' < $(LOWEST)/floors.txt)"
	REPEAT_REMINDER_PEERS=optional $(LOWEST)/bin/python -m pytest $(ARGS)

clean:
	rm -rf $(VENV) $(LOWEST) site .coverage .pytest_cache .mypy_cache .ruff_cache

bench: $(READY)
	$(BIN)/python -m benchmarks $(ARGS)

# The detectors over real conversations: `make evaluate CORPUS="a.json b.jsonl" ARGS=...`.
# The loop lab: whether the reminders break loops on a model of yours (ARGS="--model ...").
lab: $(READY)
	$(BIN)/python -m repeat_reminder_langchain lab $(ARGS)

evaluate: $(READY)
	$(BIN)/python -m evaluation $(CORPUS) $(ARGS)

# Mutation testing of the core: every mutant of the core modules against the fast part of the
# suite ([tool.mutmut] in pyproject.toml), then the score per module and every survivor, each
# either killed by a test or listed in tests/mutation-equivalent.txt with the reason it cannot
# change behaviour. Fails below 94% or on an unexplained survivor. Takes an hour or more on two
# cores.
# Each mutant's process may take at most 4 GiB of data (ulimit -d, in KiB): a mutant that
# grows a list without end dies of MemoryError, a killed mutant, instead of taking the machine.
mutate: $(READY)
	rm -rf mutants
	ulimit -d 4194304 && $(BIN)/mutmut run --max-children 2
	$(BIN)/python scripts/mutation_report.py

notebooks: $(READY)
	REPEAT_REMINDER_SAVE_DOCS=1 $(BIN)/python notebooks/run.py

# The documentation site, from docs/ and the docstrings (mkdocs.yml), into site/. Strict: a
# broken link or a reference to nothing fails the build.
docs: $(READY)
	$(BIN)/mkdocs build --strict -d site
