# Sourced by scripts/test and scripts/migrator: creates or reuses .venv and reinstalls only when
# pyproject.toml or constraints.txt changed (hash stamp in .venv), so a clean clone installs the versions
# CI tested (constraints.txt pins every package) while repeated runs start at once. Sets ROOT and VENV and
# leaves the shell in ROOT.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PYTHON="${MIGRATOR_PYTHON:-python3.11}"

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    if command -v python3 >/dev/null 2>&1 && python3 -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))'; then
        PYTHON=python3
    else
        echo "error: Python 3.11 not found: install it (e.g. pyenv install 3.11) or set MIGRATOR_PYTHON" >&2
        exit 2
    fi
fi

mkdir -p "$VENV"
exec 9>"$VENV/.bootstrap.lock"
flock 9  # two runs at once (e.g. CI and a developer) must not install into .venv concurrently
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi

STAMP="$VENV/.pyproject.sha256"
WANT="$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ] || [ ! -x "$VENV/bin/migrator" ]; then
    echo "installing migrator[dev] into .venv (pyproject.toml or constraints.txt changed)..." >&2
    "$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
    "$VENV/bin/python" -m pip install --quiet -c constraints.txt -e '.[dev]' >&2
    echo "$WANT" > "$STAMP"
fi
exec 9>&-
