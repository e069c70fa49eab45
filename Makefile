# proposalkit — `make report` and `make test` work on a fresh clone (they create .venv).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PACKAGE := $(wildcard proposalkit/*.py proposalkit/*/*.py proposalkit/catalog/*.yaml proposalkit/render/templates/*)
WORKLOADS := $(wildcard workloads/*.yaml)
PILOT_LOGS := $(wildcard workloads/pilots/*)

.PHONY: report test golden bench clean

# Build build/report.md, build/report.html and build/report.pdf from workloads/*.yaml.
report: build/report.pdf

# Create the virtual environment and install the project with its test extras.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

build/report.pdf: $(STAMP) $(WORKLOADS) $(PILOT_LOGS) $(PACKAGE)
	$(VENV)/bin/proposalkit report $(WORKLOADS) -o build --format md,html,pdf

# Run the test suite.
test: $(STAMP)
	$(PY) -m pytest

# Regenerate the golden reports in tests/golden/ (review the diff before committing).
golden: $(STAMP)
	$(PY) -m tests.golden_update

# Time `plan` on 1 and on 1000 generated workloads (figures quoted in the README).
bench: $(STAMP)
	$(PY) benchmarks/plan_bench.py

# Remove build outputs (keeps .venv).
clean:
	rm -rf build
