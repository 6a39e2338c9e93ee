"""The ``posenc-viz`` command: write the standard figures to a folder.

``posenc-viz all --out figures`` writes the whole set; one subcommand per
figure writes just that one.  Exit status 0 on success, 2 for bad arguments
or an unusable output folder (argparse's usage line and one error line, no
traceback), 1 when matplotlib is missing.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import posenc

from . import figures

PROG = "posenc-viz"

#: subcommand -> (figure name, one-line help)
COMMANDS = {
    "encoding": ("encoding", "heatmap of the length x dim sinusoidal table"),
    "wavelengths": ("wavelengths", "wavelength of each sin/cos pair on a log scale, 2*pi to base*2*pi"),
    "dimensions": ("dimensions", "four sine columns against position (the 'clock hands')"),
    "similarity": ("similarity", "matrix of dot products PE_s . PE_t"),
    "similarity-by-offset": ("similarity_by_offset", "PE_t . PE_t+k against the offset k (an even curve)"),
    "rope-decay": ("rope_decay", "RoFormer's long-term decay bound of RoPE against distance"),
    "rope-scaling": ("rope_scaling", "RoPE wavelengths under Linear, NTK, YaRN and Llama 3 scaling"),
    "alibi": ("alibi", "four heads of a causal ALiBi bias"),
    "t5-buckets": ("t5_buckets", "T5 relative position buckets"),
}


def _int_in(lo: int, hi: int, *, even: bool = False):
    kind = "an even integer" if even else "an integer"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind} in [{lo}, {hi}], got {text!r}") from None
        if not lo <= value <= hi or (even and value % 2):
            raise argparse.ArgumentTypeError(f"expected {kind} in [{lo}, {hi}], got {text!r}")
        return value

    return parse


def _base(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 1, got {text!r}") from None
    if not (math.isfinite(value) and 1.0 < value <= 1e12):
        raise argparse.ArgumentTypeError(f"expected a number in (1, 1e12], got {text!r}")
    return value


def _folder(text: str) -> str:
    if not text:
        # an unset shell variable ("--out $DIR"): never the current folder by accident
        raise argparse.ArgumentTypeError("expected a folder name, got an empty string (use '.' for the current folder)")
    return text


def _formats(text: str) -> tuple[str, ...]:
    parts = tuple(p.strip().lower().lstrip(".") for p in text.split(",") if p.strip())
    bad = [p for p in parts if p not in figures.FORMATS]
    if bad or not parts:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {', '.join(figures.FORMATS)}, got {text!r}"
        )
    return tuple(dict.fromkeys(parts))


def _common() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("options")
    g.add_argument(
        "--out", metavar="DIR", type=_folder, default="figures", help="output folder, created if missing (default: figures)"
    )
    g.add_argument(
        "--dim", type=_int_in(2, figures.MAX_DIM, even=True), default=512, help="model dimension, even (default: 512)"
    )
    g.add_argument(
        "--length", type=_int_in(1, figures.MAX_LENGTH), default=100, help="number of positions (default: 100)"
    )
    g.add_argument("--base", type=_base, default=10000.0, help="frequency base (default: 10000)")
    g.add_argument(
        "--layout",
        choices=figures.LAYOUTS,
        default="interleaved",
        help="sin/cos column layout of the table (default: interleaved)",
    )
    g.add_argument(
        "--head-dim",
        type=_int_in(2, figures.MAX_HEAD_DIM, even=True),
        default=128,
        help="rotary dimension of the RoPE figures (default: 128)",
    )
    g.add_argument(
        "--format",
        dest="formats",
        metavar="FMT",
        type=_formats,
        default=("pdf", "png"),
        help="comma-separated output formats: pdf, png, svg (default: pdf,png)",
    )
    g.add_argument("--dpi", type=_int_in(*figures.DPI_RANGE), default=300, help="raster resolution (default: 300)")
    g.add_argument(
        "--column",
        choices=("single", "double"),
        default=None,
        help="width: one paper column (3.3 in) or the text width (7 in); default each figure's own",
    )
    g.add_argument("--force", action="store_true", help="overwrite existing files")
    return p


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``posenc-viz`` (one subparser per command)."""
    return _build()[0]


def _build() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Write publication figures of positional encodings (PDF with embedded fonts, PNG, SVG).",
        epilog="Run 'posenc-viz COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {posenc.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    sub.required = True
    common = _common()
    subs = {}
    subs["all"] = sub.add_parser(
        "all",
        parents=[common],
        help="the whole standard figure set",
        description="Write the whole standard figure set: " + ", ".join(figures.FIGURES) + ".",
    )
    for cmd, (_, text) in COMMANDS.items():
        subs[cmd] = sub.add_parser(cmd, parents=[common], help=text, description=f"Write one figure: {text}.")
    return parser, subs


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``posenc-viz``; returns the exit status."""
    parser, subs = _build()
    args = parser.parse_args(argv)
    subparser = subs[args.command]
    names = None if args.command == "all" else [COMMANDS[args.command][0]]

    def progress(path: Path) -> None:
        print(f"wrote {path}", flush=True)

    try:
        figures.figure_set(
            args.out,
            dim=args.dim,
            length=args.length,
            base=args.base,
            layout=args.layout,
            head_dim=args.head_dim,
            formats=args.formats,
            dpi=args.dpi,
            column=args.column,
            names=names,
            force=args.force,
            progress=progress,
        )
    except ImportError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except figures.OutputExistsError as exc:
        subparser.error(f"{exc.summary()}; nothing was written; pass --force to overwrite")
    except (OSError, ValueError, TypeError) as exc:
        subparser.error(_one_line(exc))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 0


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        text = f"cannot write {exc.filename!r}: {exc.strerror}"
    return " ".join(text.split())
