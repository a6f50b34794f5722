#!/usr/bin/env bash
# Type-check what users type-check: the typed example (tests/typing/train_mlp.py) and three corpus
# scripts as a user would write them with tapegrad (`import tapegrad as torch`) under mypy and
# basedpyright (it bundles pyright; plain pyright needs npm), both expected to report 0 errors,
# and the package's type completeness (`--verifytypes`), which must stay >= 90% of the exported
# symbols.  Installs both checkers into the active environment.  Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
MIN_COMPLETENESS=90
start=$(date +%s)

python -m pip install --quiet "mypy>=1.10" "basedpyright>=1.20"

# The stubs must describe the package as it is (tests/test_stubs.py checks it too).
python tools/gen_public_stubs.py --check

# The checkers read the package from the source tree, whether or not it is installed.
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export MYPYPATH="$PWD"
# Corpus scripts say `import torch` (tools/run_corpus.py maps it): checked as their tapegrad
# spelling, written next to the typed example so pyright's config applies, then removed.
scripts=(tests/typing/train_mlp.py)
for name in blitz_tensors examples_vae d2l_lenet; do
    out="tests/typing/_corpus_$name.py"
    sed -e 's/^import torch$/import tapegrad as torch/' -e 's/^import torch\./import tapegrad./' \
        -e 's/^from torch\([ .]\)/from tapegrad\1/' "tools/corpus/$name.py" > "$out"
    scripts+=("$out")
done
trap 'rm -f tests/typing/_corpus_*.py' EXIT
mypy --no-incremental --follow-imports=silent "${scripts[@]}"
basedpyright -p tests/typing/pyrightconfig.json "${scripts[@]}"

report=$(mktemp)
# verifytypes exits non-zero for any unknown symbol: the threshold below is the gate.
(cd "$(mktemp -d)" && basedpyright --verifytypes tapegrad --ignoreexternal) > "$report" || true
score=$(sed -n 's/^Type completeness score: \([0-9.]*\)%/\1/p' "$report")
grep -A3 '^Symbols exported by' "$report" || true
echo "typecheck: type completeness ${score:-?}% (minimum ${MIN_COMPLETENESS}%)"
python -c "import sys; sys.exit(0 if float('${score:-0}') >= ${MIN_COMPLETENESS} else 1)" || {
    echo "typecheck: verifytypes below ${MIN_COMPLETENESS}%; see $report" >&2; exit 1; }
echo "typecheck: passed in $(( $(date +%s) - start )) s"
