# Everything runs in .venv, created and filled from pyproject.toml on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready

.PHONY: demo test lint bench clean notebooks

$(READY): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10 or newer is needed; found " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(READY)

demo: $(READY)
	$(BIN)/python -m repeat_reminder_langchain demo $(ARGS)

lint: $(READY)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint
	scripts/with-postgres $(BIN)/python -m pytest --cov --cov-report=term-missing

clean:
	rm -rf $(VENV) .coverage .pytest_cache .mypy_cache .ruff_cache

bench: $(READY)
	$(BIN)/python -m benchmarks

notebooks: $(READY)
	REPEAT_REMINDER_SAVE_DOCS=1 $(BIN)/python notebooks/run.py
