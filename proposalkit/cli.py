"""Command line: arguments, exit codes and messages; nothing else.

Exit codes: 0 ok · 1 infeasible (a workload fits no GPU configuration tried,
or `check` found a cap exceeded) · 2 invalid input, or a standard output that is
closed or cannot be written (a full disk) · 3 an internal error (a bug: one line
on stderr; PROPOSALKIT_DEBUG=1 adds the traceback, same exit code). Errors go to
stderr, never as a traceback. A reader that stops early (`| head -1`) is no error:
the rest of the output is dropped quietly.

Every command writes its standard output through `_emit`, so a failed write is
told apart from any other OSError.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

from .errors import InfeasibleError, InputError
from .text import one_line_escape as _safe

EXIT_OK, EXIT_INFEASIBLE, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130      # 128 + SIGINT, as shells report a command stopped by Ctrl-C


class _StdoutError(Exception):
    """Standard output could not be written (closed, or a full disk): exit 2."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _PipeClosed(Exception):
    """The reader of standard output went away (`| head -1`): stop quietly."""


def _emit(text: str) -> None:
    """Write command output to standard output; every write of every command goes here."""
    if sys.stdout is None:      # Python sets it to None when started with fd 1 closed (`>&-`)
        raise _StdoutError("it is closed")
    _on_stdout(sys.stdout.write, text)


def _flush() -> None:
    """Flush standard output now, so a failure is reported here and not at interpreter exit."""
    if sys.stdout is not None:
        _on_stdout(sys.stdout.flush)


def _on_stdout(operation, *args) -> None:
    """Run a write or flush of stdout; its failure becomes _PipeClosed or _StdoutError."""
    try:
        operation(*args)
    except BrokenPipeError:
        raise _PipeClosed() from None
    except OSError as error:
        raise _StdoutError(error.strerror or str(error)) from None


def _drop_stdout() -> None:
    """Point fd 1 at /dev/null so Python's flush at exit neither fails nor prints
    "Exception ignored" for the output still buffered."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):   # None, or a stream without a descriptor (tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, deferred=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._deferred = deferred   # adds the arguments when this (sub)command is used

    def parse_known_args(self, args=None, namespace=None):
        if self._deferred is not None:
            add, self._deferred = self._deferred, None
            add(self)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> None:  # argparse's own errors also exit 2, as documented
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {_safe(message)}", file=sys.stderr)
        raise SystemExit(EXIT_INPUT)

    def _print_message(self, message: str, file=None) -> None:
        """--help and --version write through _emit, so a closed or full stdout is reported
        (argparse itself drops the error); usage errors still go to stderr."""
        if message and (file is None or file is sys.stdout):
            _emit(message)
        else:
            super()._print_message(message, file)


def _plan(paths: list[str], files=None):
    """The plan of the workload files at `paths` (`files`: already loaded from them)."""
    from .input.loading import load_files
    from .planning.planner import plan_files

    # Loading and planning make no reference cycles (frozen records and tuples;
    # a collection after planning 1000 workloads finds nothing to free), but the
    # cyclic collector still walks every live object each time it runs: about a
    # tenth of the time of a large plan. Reference counting frees the rest.
    gc.disable()
    try:
        return plan_files(files if files is not None else load_files(paths))
    finally:
        gc.enable()


def cmd_plan(args) -> int:
    from .input.loading import load_files
    from .render import output
    from .review.lint import hints

    files = load_files(args.files)
    plan = _plan(args.files, files)
    for hint in hints(files, plan):      # what the author may set, never in the plan itself
        print(hint, file=sys.stderr)
    if args.format == "json":
        _emit(output.plan_json(plan))
    elif args.format == "markdown":
        from .render.report import plan_markdown_table
        _emit(plan_markdown_table(plan))
    else:
        _emit(output.plan_text(plan))
    return EXIT_OK


def _file_formats(command: str, option: str, text: str, allowed: tuple[str, ...]) -> list[str] | None:
    """The comma-separated file formats of `option`; None (after the message on stderr) when one is unknown."""
    formats = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in formats if f not in allowed]
    if unknown or not formats:
        print(f"proposalkit {command}: {option}: unknown format {_safe(', '.join(unknown)) or '(none)'} "
              f"(expected {', '.join(allowed)}, comma-separated)", file=sys.stderr)
        return None
    return formats


def cmd_report(args) -> int:
    from .render.report import FORMATS, write_reports

    formats = _file_formats("report", "--format", args.format, FORMATS)
    if formats is None:
        return EXIT_INPUT
    plan = _plan(args.files)
    try:
        written = write_reports(plan, args.output, formats)
    except OSError as error:
        where = error.filename or args.output
        print(f"proposalkit report: -o {_safe(args.output)}: cannot write {_safe(where)} ({error.strerror}); "
              "choose a folder you can write to", file=sys.stderr)
        return EXIT_INPUT
    for warning in written.warnings:
        print(f"proposalkit report: warning: {_safe(warning)}", file=sys.stderr)
    _emit("".join(f"{_safe(path)}\n" for path in written.paths))
    return EXIT_OK


def cmd_diff(args) -> int:
    from .review.diff_output import run_diff

    _emit(run_diff(args.old, args.new, args.format))
    return EXIT_OK


def cmd_check(args) -> int:
    from .review.check import check

    reasons, ok, warnings = check(args.files, args.max_gpu_hours, review=args.review, pilot_above=args.pilot_above,
                                    defaults=args.defaults)
    if warnings:
        _print_lines("\n".join(warnings))
    if reasons:
        _print_lines("\n".join(reasons))
        return EXIT_INFEASIBLE
    _emit(ok + "\n")
    return EXIT_OK


def cmd_schema(args) -> int:
    import json

    from .input.schema import json_schema

    _emit(json.dumps(json_schema(), indent=2) + "\n")
    return EXIT_OK


def cmd_catalog(args) -> int:
    from .catalog.listing import listing

    _emit(listing(args.what))
    return EXIT_OK


def cmd_pilot(args) -> int:
    from .pilot import Options, read_logs
    from .pilot.output import render_json, render_text, render_yaml

    results = read_logs(args.logs, Options(args.log_format, args.seq_len, args.gpus))
    render = {"text": render_text, "json": render_json, "yaml": render_yaml}[args.format]
    _emit(render(results))
    return EXIT_OK


def cmd_usage(args) -> int:
    from .input.accounting import AccountingReader
    from .input.loading import load_files
    from .planning.usage import job_patterns, usage
    from .render.usage import usage_json, usage_text

    formats = None
    if args.output is not None:
        from .render.progress import FORMATS

        formats = _file_formats("usage", "--report-format", args.report_format, FORMATS)
        if formats is None:
            return EXIT_INPUT
    files = load_files(args.files)
    plan = _plan(args.files, files)
    reader = AccountingReader(args.jobs, args.sacct_format)
    used = usage(plan, reader, patterns=job_patterns(files), as_of=args.as_of, start=args.start, reader=reader)
    if args.output is not None:
        from .render.progress import write_progress

        written, warnings = write_progress(used, plan, args.output, formats)
        for warning in warnings:
            print(f"proposalkit usage: warning: {_safe(warning)}", file=sys.stderr)
        _emit("".join(f"{_safe(path)}\n" for path in written))
    elif args.format == "json":
        _emit(usage_json(used))
    elif args.format == "markdown":
        from .render.progress import usage_markdown

        _emit(usage_markdown(used, plan))
    else:
        _emit(usage_text(used))
    return EXIT_OK


def _day(text: str):
    from .planning.usage import as_of_date

    try:
        return as_of_date(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date YYYY-MM-DD") from None


def _bounded_int(bound: str):
    """An argument type: a positive integer within bounds.py's bound of that name."""
    def parse(text: str) -> int:
        from .bounds import BOUNDS
        from .input.values import describe

        digits = text.strip().lstrip("+")
        if not (digits.isascii() and digits.isdigit()) or not digits.strip("0"):
            raise argparse.ArgumentTypeError(f"{describe(text)} is not a positive integer")
        value = int(digits) if len(digits) <= 100 else None     # more digits: too large, not worth converting
        if value is None or value > BOUNDS[bound].high:
            raise argparse.ArgumentTypeError(f"{describe(text)} is implausibly large; expected {BOUNDS[bound].expected}")
        return value
    return parse


def _pilot_arguments(p: argparse.ArgumentParser) -> None:
    from .pilot import FORMATS

    p.add_argument("logs", nargs="+", metavar="LOG", help="pilot-run logs (format detected from each file)")
    p.add_argument("--format", choices=("text", "json", "yaml"), default="text",
                   help="yaml: a throughput: block to paste into a workload")
    p.add_argument("--log-format", choices=FORMATS, default=None, metavar="NAME",
                   help="the log's format (default: detected)")
    p.add_argument("--seq-len", type=_bounded_int("sequence"), default=None, metavar="N",
                   help="tokens per sample, for logs that count samples (DeepSpeed)")
    p.add_argument("--gpus", type=_bounded_int("gpus"), default=None, metavar="N",
                   help="GPUs of the pilot run, for logs that do not say")


# What each command's exit codes mean: its --help, docs/cli.md and the README's table are made from
# this (tests/test_cli_exit_codes.py runs one case of every code). Every command also exits 2 when its
# standard output cannot be written and 3 on an internal error (the module docstring).
EXIT_CODES: dict[str, tuple[tuple[int, str], ...]] = {
    "plan": ((0, "planned"),
             (1, "a workload fits no GPU configuration tried (the pinned GPU/count, or with no pin any of them)"),
             (2, "invalid input")),
    "report": ((0, "written"), (1, "a workload fits no GPU configuration tried, as for plan"),
               (2, "invalid input, or DIR cannot be written")),
    "diff": ((0, "compared"), (1, "a version holds a workload that fits nowhere"), (2, "invalid input")),
    "check": ((0, "every workload fits, under the caps (with --review: no finding that is an error; warnings "
                  "are printed)"),
              (1, "a workload fits nowhere, a cap is exceeded, or (--review) a reviewer's finding is an error"),
              (2, "invalid input")),
    "catalog": ((0, "listed"), (2, "no such catalog")),
    "pilot": ((0, "read"), (2, "a log that is empty, truncated, of no known or of mixed formats, too short for a "
                               "steady state, in a unit not expected, with a number that is no measurement "
                               "(negative, zero, implausible), too large, or not UTF-8 text")),
    "schema": ((0, "printed"),),
    "usage": ((0, "reported"), (1, "a workload fits no GPU configuration tried, as for plan"),
              (2, "invalid input: a workload file, or an accounting line that is malformed (FILE:LINE), or DIR "
                  "cannot be written")),
}


def exit_codes_text(command: str) -> str:
    """'0 planned · 1 ... · 2 invalid input': one command's exit codes in a line."""
    return " · ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES[command])


def _command(sub, name: str, help: str, **kwargs) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".",
                          epilog=f"exit codes: {exit_codes_text(name)}", **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="proposalkit", description="Resource justification for AI compute allocation proposals.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    formats = "text: a table; json: the plan as data; markdown: a table to paste"

    p = _command(sub, "plan", "validate and plan workload files, print the plan")
    p.add_argument("files", nargs="+", metavar="FILE", help="workload files (YAML)")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text", help=formats)
    p.set_defaults(func=cmd_plan)

    p = _command(sub, "report", "write section B (report.*) and its supplement (supplement.*)")
    p.add_argument("files", nargs="+", metavar="FILE", help="workload files (YAML), planned together")
    p.add_argument("-o", "--output", default="build", metavar="DIR", help="output folder (default: build)")
    p.add_argument("--format", default="md,html,pdf", metavar="md,html,pdf",
                   help="comma-separated: md, html, pdf (default: all three)")
    p.set_defaults(func=cmd_report)

    p = _command(sub, "diff", "budget change between two versions (files or REV:PATH)")
    p.add_argument("old", metavar="OLD", help="the version before: a file, REV:PATH read from git, or /dev/null")
    p.add_argument("new", metavar="NEW", help="the version after, as OLD")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown",
                   help="markdown: to paste into a pull request; json: the same as data")
    p.set_defaults(func=cmd_diff)

    p = _command(sub, "check", "validate and plan; exit 1 when infeasible, over a cap, or (--review) with a "
                               "reviewer's finding")
    p.add_argument("files", nargs="+", metavar="FILE", help="workload files (YAML)")
    p.add_argument("--max-gpu-hours", type=float, default=None, metavar="N",
                   help="fail when the requested GPU-hours exceed N")
    p.add_argument("--review", action="store_true",
                   help="also what a proposal reviewer would reject, each FILE:LINE: field: finding; what to do "
                        "(a workload without a description; one over --pilot-above GPU-hours without a pilot; a "
                        "pilot on another GPU type without extrapolation:; a buffer outside 0.20-0.30 without "
                        "buffer_reason:; the track's caps; section B over its page budget; a chance to suffice "
                        "under 0.8 where the plan has ranges; as a warning, a pilot log's framework unset)")
    p.add_argument("--pilot-above", type=float, default=None, metavar="N",
                   help="with --review: the requested GPU-hours above which a workload needs a pilot "
                        "(default 1,000: half the Start-Up track's cap of about 2,000)")
    p.add_argument("--defaults", action="store_true",
                   help="also, as hints, the planner's defaults each workload takes and the field that sets each "
                        "(the documents state them as assumptions, never as instructions)")
    p.set_defaults(func=cmd_check)

    p = _command(sub, "catalog", "list the built-in catalogs with their sources")
    p.add_argument("what", nargs="?", choices=("gpus", "models", "resources"), default="gpus",
                   help="which catalog (default: gpus)")
    p.set_defaults(func=cmd_catalog)

    # Its arguments are added when `pilot` is run: --log-format's choices come from the pilot
    # readers, which every other command would otherwise import at start-up (~10 ms).
    p = _command(sub, "pilot", "read pilot-run logs: steady-state throughput and peak memory",
                 deferred=_pilot_arguments)
    p.set_defaults(func=cmd_pilot)

    p = _command(sub, "usage", "the plan beside job accounting: used, lost, burn rate, run-out date")
    p.add_argument("files", nargs="+", metavar="PLAN_FILE", help="workload files (YAML), planned together")
    p.add_argument("--jobs", nargs="+", required=True, metavar="ACCOUNTING",
                   help="job accounting: sacct --parsable2 output (with or without its header; a job's tokens "
                        "from its Comment as tokens=N), or CSV (job,gpus,start,end|hours[,workload,name,gpu,nodes,"
                        "state,tokens,log]); a job in two files is counted once, from the file named last")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                   help="text: tables; json: the figures as data; markdown: the tables to paste")
    p.add_argument("-o", "--output", default=None, metavar="DIR",
                   help="write the progress report (progress.md, .html, .pdf, with its burn-down charts) into DIR")
    p.add_argument("--report-format", default="md,html,pdf", metavar="md,html,pdf",
                   help="with -o: comma-separated md, html, pdf (default: all three)")
    p.add_argument("--as-of", type=_day, default=None, metavar="YYYY-MM-DD",
                   help="the day usage and the 30-day burn rate end (default: the day of the latest job end); "
                        "jobs started later are left out")
    p.add_argument("--start", type=_day, default=None, metavar="YYYY-MM-DD",
                   help="the allocation's first day, where the burn-down's planned line starts (default: the "
                        "first day a job ran)")
    p.add_argument("--sacct-format", default=None, metavar="FIELDS",
                   help="the --format sacct was run with, for output written with --noheader (default: "
                        "JobID,JobName,Account,Partition,AllocTRES,ElapsedRaw,State,Start,End)")
    p.set_defaults(func=cmd_usage)

    p = _command(sub, "schema", "JSON Schema of the workload file format")
    p.set_defaults(func=cmd_schema)
    return parser


def _print_lines(text: str) -> None:
    """Messages on stderr, one a line, no control character raw (errors.py escapes its own;
    this holds for any message an error class formats itself)."""
    print("\n".join(_safe(line) for line in text.split("\n")), file=sys.stderr)


def _print_traceback_if_asked() -> None:
    """PROPOSALKIT_DEBUG=1: the traceback of the error being handled (the exit code stays)."""
    if os.environ.get("PROPOSALKIT_DEBUG"):
        import traceback     # here, not at the top: only a debugging run pays for its import

        traceback.print_exc()


def _option_like_revision(argv: list[str]) -> str | None:
    """`diff --output=x:plan.yaml NEW`: a REV:PATH whose revision starts with '-', which argparse
    takes for an unknown option (and then says NEW is missing); the argument, to refuse by name."""
    if not argv or argv[0] != "diff" or "--" in argv:
        return None
    return next((a for a in argv[1:] if a.startswith("-") and ":" in a and not a.startswith("--format")), None)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    prog = parser.prog
    try:
        option_like = _option_like_revision(sys.argv[1:] if argv is None else argv)
        if option_like is not None:
            from .review.sides import check_revision

            check_revision(option_like)
        try:
            args = parser.parse_args(argv)
        except SystemExit:          # --help printed, or a usage error on stderr: argparse's own exit
            _flush()
            raise
        prog = f"{parser.prog} {args.command}"
        if sys.stdout is None:      # checked first: a command with nowhere to print writes nothing
            raise _StdoutError("it is closed")
        code = args.func(args)
        _flush()
        return code
    except InputError as error:
        _print_lines(str(error))
        return EXIT_INPUT
    except InfeasibleError as error:
        _print_lines(str(error))
        return EXIT_INFEASIBLE
    except _PipeClosed:
        _drop_stdout()
        return EXIT_OK
    except _StdoutError as error:
        _print_traceback_if_asked()
        _drop_stdout()
        print(f"{prog}: cannot write to standard output ({error.reason}); "
              "redirect it to a file or a pipe that can take it", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as error:  # a bug of ours: one line, the traceback only on request
        _print_traceback_if_asked()
        print(f"proposalkit: internal error: {type(error).__name__}: {_safe(error)} "
              "(a bug in proposalkit; set PROPOSALKIT_DEBUG=1 for the traceback and please report it)",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
