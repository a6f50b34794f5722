#!/usr/bin/env bash
# Build the documentation site (MkDocs + mkdocstrings, mkdocs.yml) with --strict: a broken link,
# a broken cross-reference or a tutorial example that no longer behaves as its page says fails
# the build.  Installs the `docs` extra's packages into the active environment first (without
# reinstalling tapegrad: the API reference imports the source tree, so build the core in place
# first: `pip install -e .`).  The site goes to $1, or to a new temporary directory.
#   bash tools/docs.sh [SITE_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

# The docs extra's requirements, read from pyproject.toml (one list to maintain).
mapfile -t reqs < <(python - <<'PY'
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["docs"]))
PY
)
python -m pip install --quiet "${reqs[@]}"

site="${1:-$(mktemp -d)/site}"
start=$SECONDS
NO_MKDOCS_2_WARNING=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" \
    python -m mkdocs build --strict --site-dir "$site"
echo "docs: site built in $((SECONDS - start)) s: $site"
