"""`python -m tapegrad [COMMAND] [options]`: demo (the default), bench, examples; --version.

Each command parses its own options (`python -m tapegrad COMMAND --help`): this level only picks
the command, so options given without a command (`python -m tapegrad --epochs 5`) go to demo.
"""
import argparse
import sys

COMMANDS = {
    "demo": "train on bundled data: digits with an MLP (the main job, the default) or a CNN "
            "(--model cnn), or a character-level GRU on a short text ('demo chars')",
    "bench": "time tapegrad against hand-written numpy (and PyTorch) on a few workloads",
    "examples": "run the autograd examples of the tutorial tapegrad grew from",
}


def build_parser() -> argparse.ArgumentParser:
    from .version import tapegrad_version
    parser = argparse.ArgumentParser(
        prog="python -m tapegrad",
        description="tapegrad: a small PyTorch-compatible autodiff library. With no command, "
                    "runs 'demo'.",
        epilog="'python -m tapegrad COMMAND --help' lists a command's options.")
    parser.add_argument("--version", action="version", version=f"tapegrad {tapegrad_version}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, summary in COMMANDS.items():
        # add_help=False: a command's --help reaches the command's own parser, which knows its
        # options; this parser would list none.
        commands.add_parser(name, help=summary, description=summary, add_help=False)
    return parser


def main(argv) -> int:
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["demo", *argv]
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "demo":
        from .demo import main as demo
        return demo(rest)
    if args.command == "bench":
        from .bench import main as bench
        return bench(rest)
    if rest:
        parser.error(f"examples takes no options, got {' '.join(rest)}")
    from .examples import main as examples
    examples()
    return 0


if __name__ == "__main__":      # importing the module (docs tools do) must not run a command
    sys.exit(main(sys.argv[1:]))
