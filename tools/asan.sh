#!/usr/bin/env bash
# Build the compiled core with AddressSanitizer (in a scratch copy of the tracked files) and run
# the test suite under it.  Exits non-zero on any ASan report or test failure.
#   bash tools/asan.sh [pytest args...]      build and test in a temporary directory
#                                            (default: the fast tests, -m "not slow and not corpus")
#   bash tools/asan.sh build DIR             only build, into DIR (CI runs this in the background
#                                            while the main test run uses the other core)
#   bash tools/asan.sh test DIR [args...]    only test what `build DIR` built
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

asan_build() {
    local work=$1
    mkdir -p "$work"
    (cd "$root" && git ls-files -z | xargs -0 cp --parents -t "$work")
    # The build needs Cython and setuptools in this environment (pip's isolated builds do not
    # leave them behind).
    python -c "import Cython, setuptools" 2>/dev/null \
        || python -m pip install -q "Cython>=3.0,<4" setuptools
    (cd "$work" && TAPEGRAD_ASAN=1 python setup.py -q build_ext --inplace > build.log 2>&1) \
        || { cat "$work/build.log"; return 1; }
}

asan_test() {
    local work=$1; shift
    cd "$work"
    local libasan
    libasan=$(gcc -print-file-name=libasan.so)
    # pymalloc hides Python allocations from ASan; interpreter-lifetime allocations are not leaks.
    export PYTHONMALLOC=malloc
    export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1
    # DataLoader worker processes are pure Python (multiprocessing); forked under the ASan
    # runtime they run too slowly for their watchdogs, and they exercise no C code of ours: the
    # plain run covers them.
    # Left out as well, as they check no C code of ours and are among the slowest under the
    # sanitizer: the stubs, imports, docstrings and packaging (Python tooling, fresh
    # interpreters); the demo and the bench CLI (whole runs in child processes: the kernels they
    # use have their own tests); special functions against mpmath (numpy code; the time is the
    # reference's).
    if [ $# -eq 0 ]; then
        set -- tests -m "not slow and not corpus" --ignore=tests/test_dataloader_workers.py
        local skip
        for skip in stubs lazy_imports docstrings packaging public_entry_install bench_cli \
                    demo demo_chars special_more; do
            set -- "$@" "--ignore=tests/test_$skip.py"
        done
    fi
    # PyTorch's libraries abort under an LD_PRELOADed ASan runtime: hide torch (an import of it
    # fails, so the parity tests skip; ModuleNotFoundError, which pytest.importorskip skips on) -
    # the sanitizer is for tapegrad's C code.
    mkdir -p "$work/no_torch/torch"
    echo 'raise ModuleNotFoundError("torch is hidden while running under AddressSanitizer")' \
        > "$work/no_torch/torch/__init__.py"
    PYTHONPATH="$work/no_torch${PYTHONPATH:+:$PYTHONPATH}" LD_PRELOAD="$libasan" \
        python -m pytest -q -p no:cacheprovider "$@"
    echo "asan: no AddressSanitizer errors"
}

case "${1:-}" in
    build) asan_build "$2" ;;
    test) dir=$2; shift 2; asan_test "$dir" "$@" ;;
    *)
        work=$(mktemp -d)
        trap 'rm -rf "$work"' EXIT
        asan_build "$work"
        asan_test "$work" "$@"
        ;;
esac
