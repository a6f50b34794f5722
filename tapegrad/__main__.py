"""`python -m tapegrad [demo|examples|bench] [options]`.

demo      train an MLP on the bundled handwritten digits (the main job; the default)
examples  run the autograd examples of the tutorial tapegrad grew from
bench     time tapegrad against hand-written numpy (and PyTorch) on a few workloads
          (--quick, --repeat N; see bench/README.md)
"""
import sys


def main(argv) -> int:
    command = argv[0] if argv and not argv[0].startswith("-") else "demo"
    rest = argv[1:] if argv and not argv[0].startswith("-") else argv
    if command == "demo":
        from .demo import main as demo
        return demo(rest)
    if command == "bench":
        from .bench import main as bench
        return bench(rest)
    if command == "examples":
        from .examples import main as examples
        examples()
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


sys.exit(main(sys.argv[1:]))
