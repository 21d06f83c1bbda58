#!/usr/bin/env bash
# Import + smoke subset on the other Python versions pyproject declares (3.10, 3.12), in fresh venvs.
# The interpreters come from the machine's pyenv (/root/.pyenv/versions) or python3.X on PATH: Debian
# 12 packages only 3.11, and `uv python install` downloads from outside the package registries.
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=(tests/frontend/test_call_boundary.py tests/runtime tests/kernels/test_emulation.py
       tests/enzyme_plugin/test_autodiff_api.py tests/frontend/test_no_source.py)  # the last: bytecode per version
status=0
made=()
trap 'rm -rf "${made[@]}"' EXIT  # the venvs (about 280 MB each)
for version in 3.10 3.12; do
    py="$(ls -d /root/.pyenv/versions/"$version".*/bin/python 2>/dev/null | sort -V | tail -1 || true)"
    if [ -z "$py" ]; then  # a pyenv shim on PATH may name a version it cannot run: try it
        py="$(command -v "python$version" || true)"
        [ -n "$py" ] && ! "$py" -c pass 2>/dev/null && py=""
    fi
    if [ -z "$py" ]; then
        echo "python-versions: no Python $version on this machine (pyenv or PATH): not checked" >&2
        continue
    fi
    made+=("$(mktemp -d)")
    venv="${made[-1]}/venv$version"
    "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install -q -e . pytest 2>&1 | grep -v "^WARNING: Location" || true
    echo "python-versions: $("$venv/bin/python" --version)"
    "$venv/bin/python" -c "import gpucompiler, enzyme_plugin, gpucompiler_plugins" || status=1
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "slow or not slow" "${smoke[@]}" || status=1
done
exit $status
