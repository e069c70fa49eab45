"""Command line: arguments, exit codes and messages; nothing else.

Exit codes: 0 ok · 1 infeasible (a pinned GPU/count cannot hold a workload,
or `check` found a cap exceeded) · 2 invalid input · 3 an internal error
(a bug: one line on stderr; PROPOSALKIT_DEBUG=1 shows the traceback). Errors go to stderr,
never as a traceback.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

from .errors import InfeasibleError, InputError

EXIT_OK, EXIT_INFEASIBLE, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own errors also exit 2, as documented
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_INPUT)


def _plan(paths: list[str]):
    from .input.loading import load_files
    from .planning.planner import plan_files

    # Loading and planning make no reference cycles (frozen records and tuples;
    # a collection after planning 1000 workloads finds nothing to free), but the
    # cyclic collector still walks every live object each time it runs: about a
    # tenth of the time of a large plan. Reference counting frees the rest.
    gc.disable()
    try:
        return plan_files(load_files(paths))
    finally:
        gc.enable()


def cmd_plan(args) -> int:
    from .render import output

    plan = _plan(args.files)
    if args.format == "json":
        sys.stdout.write(output.plan_json(plan))
    elif args.format == "markdown":
        from .render.report import plan_markdown_table
        sys.stdout.write(plan_markdown_table(plan))
    else:
        sys.stdout.write(output.plan_text(plan))
    return EXIT_OK


def cmd_report(args) -> int:
    from .render.report import write_reports

    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = [f for f in formats if f not in ("md", "html", "pdf")]
    if unknown or not formats:
        print(f"proposalkit report: --format: unknown format {', '.join(unknown) or '(none)'} "
              "(expected md, html, pdf, comma-separated)", file=sys.stderr)
        return EXIT_INPUT
    plan = _plan(args.files)
    try:
        written = write_reports(plan, args.output, formats)
    except OSError as error:
        where = error.filename or args.output
        print(f"proposalkit report: -o {args.output}: cannot write {where} ({error.strerror}); "
              "choose a folder you can write to", file=sys.stderr)
        return EXIT_INPUT
    for path in written:
        print(path)
    return EXIT_OK


def cmd_diff(args) -> int:
    from .review.diff import run_diff

    sys.stdout.write(run_diff(args.old, args.new, args.format))
    return EXIT_OK


def cmd_check(args) -> int:
    from .review.check import run_check

    return run_check(args.files, args.max_gpu_hours)


def cmd_schema(args) -> int:
    import json

    from .input.schema import json_schema

    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")
    return EXIT_OK


def cmd_catalog(args) -> int:
    from . import catalog
    from .units import GiB

    if args.what == "gpus":
        print(f"{'id':<16} {'usable memory':>14} {'16-bit dense':>14} {'bandwidth':>11}  source")
        for g in catalog.gpus().values():
            print(f"{g.id:<16} {g.usable_memory_bytes / GiB:>10.2f} GiB {g.peak_16bit_flops / 1e12:>8.1f} TFLOP/s "
                  f"{g.memory_bandwidth / 1e12:>6.3f} TB/s  {g.source}")
    elif args.what == "models":
        print(f"{'id':<16} {'params':>16} {'L':>4} {'h':>6} {'a':>4} {'kv':>4} {'ffn':>6} {'vocab':>7} {'ctx':>7}  source")
        for m in catalog.models().values():
            print(f"{m.id:<16} {m.params:>16,} {m.layers:>4} {m.hidden:>6} {m.heads:>4} {m.kv_head_count:>4} "
                  f"{m.ffn_hidden:>6} {m.vocab:>7} {m.max_context or 0:>7}  {m.source}")
    else:
        from .planning import resources

        for r in resources.resources().values():
            print(f"{r.id:<24} {r.unit:<12} {','.join(r.gpus):<24} {r.gpus_per_node}/node  {r.source}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="proposalkit", description="Resource justification for AI compute allocation proposals.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("plan", help="validate and plan workload files, print the plan")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("report", help="write the justification report(s)")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", default="build", metavar="DIR", help="output folder (default: build)")
    p.add_argument("--format", default="md,html,pdf", help="comma-separated: md, html, pdf (default: all three)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("diff", help="budget change between two versions (files or REV:PATH)")
    p.add_argument("old", metavar="OLD")
    p.add_argument("new", metavar="NEW")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser("check", help="validate and plan; exit 1 when infeasible or over a cap")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--max-gpu-hours", type=float, default=None, metavar="N",
                   help="fail when the requested GPU-hours exceed N")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("catalog", help="list the built-in catalogs with their sources")
    p.add_argument("what", nargs="?", choices=("gpus", "models", "resources"), default="gpus")
    p.set_defaults(func=cmd_catalog)

    p = sub.add_parser("schema", help="JSON Schema of the workload file format")
    p.set_defaults(func=cmd_schema)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as error:
        print(str(error), file=sys.stderr)
        return EXIT_INPUT
    except InfeasibleError as error:
        print(str(error), file=sys.stderr)
        return EXIT_INFEASIBLE
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # a bug of ours: one line, the traceback only on request
        if os.environ.get("PROPOSALKIT_DEBUG"):
            raise
        print(f"proposalkit: internal error: {type(error).__name__}: {error} "
              "(a bug in proposalkit; set PROPOSALKIT_DEBUG=1 for the traceback and please report it)",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
