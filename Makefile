# Everything runs in .venv, created and filled from pyproject.toml on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready

.PHONY: demo test lint bench clean notebooks

# A venv belongs to the interpreter that built it. One whose python is not $(PYTHON)'s (another
# version, another installation, or one that is gone) is out of date whatever its time stamps
# say, and is rebuilt from nothing instead of failing half-way.
python_id = $(shell $(1) -c 'import sys; print(sys.version.split()[0], sys.base_prefix)' 2>/dev/null)
WANT := $(call python_id,$(PYTHON))
ifneq ($(call python_id,$(BIN)/python),$(WANT))
.PHONY: $(READY)
CLEAR := --clear
endif

NEED_PYTHON := import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed; found " + sys.version.split()[0])

$(READY): pyproject.toml
	@$(PYTHON) -c '$(NEED_PYTHON)'
	$(PYTHON) -m venv $(CLEAR) $(VENV)
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
