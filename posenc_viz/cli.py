"""The ``posenc-viz`` command: write the standard figures to a folder.

``posenc-viz all --out figures`` writes the whole set; one subcommand per
figure writes just that one.  ``--table PATH[:KEY]`` draws a table read
from a file (:func:`posenc_viz.load_table`) instead of posenc's, the
``grid-similarity`` subcommand draws the ViT paper's figure of a table,
``rope-scaling --hf-config config.json`` draws a released model's RoPE and
``rope-axes --axes-dim 16,56,56`` (or ``--hf-config``) the per-axis spectrum of
an image or video model's RoPE.
Exit status 0 on success, 2 for bad arguments, an unreadable input file or
an unusable output folder (argparse's usage line and one error line, no
traceback, nothing written), 1 when a needed package (matplotlib,
safetensors, torch) is missing.  SIGTERM and SIGHUP unwind like Ctrl-C (the
figure being written is removed), then end the process with the signal.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import posenc

from . import _files, _mpl, figures
from ._internals import TABLE_LAYOUTS
from .grid_similarity import grid_layout, table_2d
from .tables import KINDS, load_table

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
    "rope-axes": ("rope_axes", "per-axis wavelengths of a multi-axis (image / video) RoPE against its grid"),
    "alibi": ("alibi", "four heads of a causal ALiBi bias"),
    "t5-buckets": ("t5_buckets", "T5 relative position buckets"),
    "window-bias": ("window_bias", "2-D relative bias of a 5 x 5 attention window (Swin-style), a map per query"),
}

#: subcommands of a table read from a file (not in ``all``)
TABLE_COMMANDS = {
    "grid-similarity": (
        "grid_similarity",
        "ViT-style grid of cosine-similarity maps of a table's patch embeddings (Dosovitskiy et al., Fig. 7)",
    ),
}

#: subcommands that draw ``--table`` instead of posenc's sinusoidal table, and what they draw then
TABLE_OPTION = {
    "encoding": "the table as a heatmap",
    "similarity": "the cosine similarity of its rows",
    "similarity-by-offset": "the mean cosine similarity of rows t and t+k",
    "dimensions": "four columns spread over its width",
}

#: the ``audit`` subcommand: what it draws, and the dtypes it runs a model's rotary modules at
AUDIT_HELP = "a model's RoPE error against position (its own rotary modules vs posenc's exact tables)"
AUDIT_DTYPES = ("float32", "bfloat16", "float16", "float64")

#: defaults of the size options (None in the parser, so that an explicit one is seen)
SIZE_DEFAULTS = {"dim": 512, "length": 100, "base": 10000.0, "layout": "interleaved", "head_dim": 128}

MAX_PREFIX = 1024
#: the largest --hf-config read (a config.json is a few KB; with label maps, a few MB)
MAX_CONFIG_BYTES = 1 << 24
#: the deepest nesting of a config (Hugging Face configs nest a few levels)
MAX_CONFIG_DEPTH = 64
#: subcommands that draw the cosine similarity of a table's rows
COSINE_COMMANDS = ("similarity", "similarity-by-offset", "grid-similarity")


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


def _table_spec(text: str) -> tuple[str, str | None]:
    """``PATH`` or ``PATH:KEY`` (split at the last colon after a known suffix)."""
    if not text:
        raise argparse.ArgumentTypeError("expected PATH or PATH:KEY, got an empty string")
    head, sep, key = text.rpartition(":")
    if sep and head.lower().endswith(tuple(KINDS)) and not Path(text).exists():
        if not key:
            raise argparse.ArgumentTypeError(f"expected PATH:KEY with a key after the colon, got {text!r}")
        return head, key
    return text, None


def _grid(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"expected HxW such as 14x14, got {text!r}")
    h, w = int(m.group(1)), int(m.group(2))
    if h < 1 or w < 1 or h * w > figures.MAX_GRID_MAPS:
        raise argparse.ArgumentTypeError(
            f"expected HxW with positive sizes and at most {figures.MAX_GRID_MAPS} patches, got {text!r}"
        )
    return h, w


def _int_list(what: str, *, even: bool = False):
    kind = "positive even integers" if even else "positive integers"

    def parse(text: str) -> tuple[int, ...]:
        parts = [p.strip() for p in text.replace("x", ",").split(",")]
        if any(not p for p in parts):
            msg = f"expected comma-separated {kind} ({what}), got an empty entry in {text!r}"
            raise argparse.ArgumentTypeError(msg)
        try:
            values = tuple(int(p) for p in parts)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind} ({what}), got {text!r}") from None
        if not values or len(values) > 8 or any(v < 1 or v > 2**20 or (even and v % 2) for v in values):
            raise argparse.ArgumentTypeError(f"expected 1 to 8 comma-separated {kind} ({what}), got {text!r}")
        return values

    return parse


def _file(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("expected a file name, got an empty string")
    return text


def _output() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("output")
    g.add_argument(
        "--out",
        metavar="DIR",
        type=_folder,
        default="figures",
        help="output folder, created if missing (default: figures)",
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


def _sizes() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("posenc's tables")
    g.add_argument(
        "--dim", type=_int_in(2, figures.MAX_DIM, even=True), default=None, help="model dimension, even (default: 512)"
    )
    g.add_argument(
        "--length", type=_int_in(1, figures.MAX_LENGTH), default=None, help="number of positions (default: 100)"
    )
    g.add_argument("--base", type=_base, default=None, help="frequency base (default: 10000)")
    g.add_argument(
        "--layout",
        choices=TABLE_LAYOUTS,
        default=None,
        help="sin/cos column layout of the table (default: interleaved)",
    )
    g.add_argument(
        "--head-dim",
        type=_int_in(2, figures.MAX_HEAD_DIM, even=True),
        default=None,
        help="rotary dimension of the RoPE figures (default: 128)",
    )
    return p


def _add_table(g: Any, *, required: bool = False) -> None:
    g.add_argument(
        "--table",
        metavar="PATH[:KEY]",
        type=_table_spec,
        required=required,
        help="a table from a file (.npy, .npz, .safetensors, .pt/.pth/.bin) and, after a colon, "
        "its key (a dotted path in a torch checkpoint)",
    )


def _build() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Write publication figures of positional encodings (PDF with embedded fonts, PNG, SVG).",
        epilog="Run 'posenc-viz COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {posenc.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    sub.required = True
    output, sizes = _output(), _sizes()
    subs = {}
    subs["all"] = sub.add_parser(
        "all",
        parents=[sizes, output],
        help="the whole standard figure set",
        description="Write the whole standard figure set: " + ", ".join(figures.FIGURES) + ".",
    )
    for cmd, (_, text) in COMMANDS.items():
        description = f"Write one figure: {text}."
        if cmd in TABLE_OPTION:
            description += f" With --table: {TABLE_OPTION[cmd]}."
        if cmd == "rope-scaling":
            description += " With --hf-config: the model's RoPE against the unscaled one."
        if cmd == "rope-axes":
            description += (
                " Default: the head (--head-dim) split over frames, rows and columns as Wan 2.1 splits it;"
                " --axes-dim or --hf-config give a model's axes."
            )
        subs[cmd] = p = sub.add_parser(cmd, parents=[sizes, output], help=text, description=description)
        if cmd in TABLE_OPTION:
            _add_table(p.add_argument_group("a table from a file"))
        if cmd == "rope-scaling":
            g = p.add_argument_group("a released model")
            g.add_argument(
                "--hf-config",
                metavar="JSON",
                type=_file,
                help="a Hugging Face config.json: its RoPE (head dim, theta, scaling) replaces --head-dim and --base",
            )
            g.add_argument(
                "--layer-type",
                metavar="NAME",
                default=None,
                help="with --hf-config: which per-layer-type RoPE entry (such as full_attention)",
            )
        if cmd == "rope-axes":
            g = p.add_argument_group("the axes")
            g.add_argument(
                "--axes-dim",
                metavar="D,D,...",
                type=_int_list("one rotary width per axis", even=True),
                default=None,
                help="rotary width of each axis, such as 16,56,56 (Flux)",
            )
            g.add_argument(
                "--grid-shape",
                metavar="N,N,...",
                type=_int_list("positions per axis"),
                default=None,
                help="positions along each axis, drawn as reference lines (such as 1,64,64)",
            )
            g.add_argument(
                "--split",
                choices=("blocks", "strided"),
                default=None,
                help="each axis its own RoPE (blocks, default) or every n-th frequency of one (strided, Pixtral)",
            )
            g.add_argument(
                "--hf-config",
                metavar="JSON",
                type=_file,
                help="a config.json with a multi-axis RoPE: diffusers' axes_dims_rope / rope_axes_dim, or a "
                "transformers vision config with an axial rope_parameters",
            )
    for cmd, (_, text) in TABLE_COMMANDS.items():
        subs[cmd] = p = sub.add_parser(cmd, parents=[output], help=text, description=f"Write one figure: {text}.")
        g = p.add_argument_group("a table from a file")
        _add_table(g, required=True)
        g.add_argument(
            "--grid", metavar="HxW", type=_grid, default=None, help="patch grid (default: square, from the row count)"
        )
        g.add_argument(
            "--prefix",
            metavar="N",
            type=_int_in(0, MAX_PREFIX),
            default=0,
            help="rows before the patches (cls and register tokens), dropped (default: 0)",
        )
    subs["audit"] = p = sub.add_parser(
        "audit",
        parents=[output],
        help=AUDIT_HELP,
        description=f"Write one figure: {AUDIT_HELP} (posenc.audit_rope), and print the table.",
    )
    g = p.add_argument_group("the model")
    g.add_argument("--hf-config", metavar="JSON", type=_file, required=True, help="a transformers config.json")
    g.add_argument(
        "--dtype",
        choices=AUDIT_DTYPES,
        default=None,
        help="the dtype to run the rotary modules at (default: the config's dtype, else float32)",
    )
    return parser, subs


class _Usage(Exception):
    """A bad input file or option combination: usage and one error line."""


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _read_table(spec: tuple[str, str | None], command: str) -> Any:
    path, key = spec
    try:
        # the size limit goes into the reader: checked from the file's headers, before anything is read
        table = table_2d(load_table(path, key, max_size=figures.MAX_TABLE_SIZE), name="table")
    except ImportError:
        raise
    except FileNotFoundError as exc:
        text = str(exc).replace(f"`source` {path!r}", f"file {path!r}")
        raise _Usage(f"argument --table: {text}") from None
    except OSError as exc:
        raise _Usage(f"argument --table: cannot read {path!r}: {exc.strerror or exc}") from None
    except (ValueError, TypeError) as exc:
        text = str(exc).replace("`source`", "the file").replace("`key`", "KEY").replace("`table`", "the table")
        text = text.replace("`max_size`", "the limit of a figure")
        raise _Usage(f"argument --table: {' '.join(text.split())}") from None
    if table.dtype.kind == "b":
        table = table.astype("int8")
    if table.dtype.kind == "f":
        _check_finite(table)
    if command in COSINE_COMMANDS and table.shape[0] > figures.MAX_LENGTH:
        raise _Usage(
            f"argument --table: {table.shape[0]} rows is more than the {figures.MAX_LENGTH} "
            f"a {command} figure draws (a rows x rows matrix)"
        )
    return table


def _check_finite(table: Any) -> None:
    """A table with NaN or infinite values is refused: every table figure
    normalises or averages rows, so one bad cell would blank a whole row and
    column of a similarity matrix, or every point of the offset curve."""
    import numpy as np

    bad = ~np.isfinite(table)
    count = int(np.count_nonzero(bad))
    if count:
        rows = np.flatnonzero(bad.any(axis=1))
        raise _Usage(
            f"argument --table: the table has {count} non-finite value{'s' if count > 1 else ''} (NaN or infinity) "
            f"in {rows.size} row{'s' if rows.size > 1 else ''} (first: row {int(rows[0])}) of {table.shape[0]}; "
            "a figure of it would mislead"
        )


def _zero_rows(table: Any, command: str, prefix: int) -> str | None:
    """A note when rows drawn by a cosine-similarity figure are zero (a
    padding row of a learned table): their similarity is undefined."""
    import numpy as np

    if command not in COSINE_COMMANDS:
        return None
    zero = np.flatnonzero(~table[prefix:].any(axis=1)) + prefix
    if not zero.size:
        return None
    shown = ", ".join(str(int(r)) for r in zero[:5]) + (", ..." if zero.size > 5 else "")
    left = "; left out of the mean at each offset" if command == "similarity-by-offset" else ""
    rows = "row" if zero.size == 1 else "rows"
    return (
        f"{PROG}: note: {zero.size} zero {rows} ({shown}): a zero row has no direction, "
        f"its cosine similarities are undefined and drawn grey{left}"
    )


def _read_json(path: str) -> dict[str, Any]:
    """The JSON object of ``--hf-config``: a regular file of at most
    MAX_CONFIG_BYTES, nested at most MAX_CONFIG_DEPTH levels (usage errors)."""
    try:
        text = _files.read_text(Path(path), "hf_config", MAX_CONFIG_BYTES)
    except FileNotFoundError as exc:
        raise _Usage(f"argument --hf-config: {str(exc).replace('`hf_config`', 'file')}") from None
    except ValueError as exc:
        raise _Usage(f"argument --hf-config: {str(exc).replace('`hf_config`', 'file')}") from None
    try:
        config = json.loads(text)
    except RecursionError:
        config = None  # nested deeper than the parser goes: refused below
    except ValueError as exc:  # not JSON, or a number too long to read
        raise _Usage(f"argument --hf-config: {path!r} is not JSON ({' '.join(str(exc).split())[:200]})") from None
    if config is None or _files.json_depth(config, MAX_CONFIG_DEPTH) > MAX_CONFIG_DEPTH:
        raise _Usage(f"argument --hf-config: {path!r} is nested deeper than {MAX_CONFIG_DEPTH} levels")
    if not isinstance(config, dict):
        raise _Usage(f"argument --hf-config: {path!r} must hold a JSON object, got a {type(config).__name__}")
    return config


def _read_config(path: str, layer_type: str | None) -> dict[str, Any]:
    from posenc import scaling

    config = _read_json(path)
    try:
        rope = scaling.from_hf(config, **({} if layer_type is None else {"layer_type": layer_type}))
    except (ValueError, TypeError) as exc:
        text = str(exc).replace("`layer_type`", "--layer-type")
        raise _Usage(f"argument --hf-config: {' '.join(text.split())}") from None
    if "axes_dim" in rope:
        raise _Usage(
            f"argument --hf-config: {path!r} describes RoPE over several axes (a vision tower): "
            "draw it with `posenc-viz rope-axes --hf-config`"
        )
    label = config.get("model_type")
    if not isinstance(label, str) or not label or len(label) > 64:
        label = Path(path).stem
    return {"dim": rope["dim"], "base": rope["base"], "scaling": rope["scaling"], "label": label}


def _prepare_axes(args: argparse.Namespace, p: figures.Params) -> figures.Params:
    """The axes of the rope-axes figure from --axes-dim, --hf-config or the default."""
    from .axes import axes_frequencies, axes_from_config

    given = [f"--{n.replace('_', '-')}" for n in ("axes_dim", "hf_config") if getattr(args, n) is not None]
    if len(given) == 2:
        raise _Usage("argument --hf-config: not allowed with --axes-dim (the config sets the axes)")
    if args.hf_config is not None:
        if args.base is not None:
            raise _Usage("argument --base: not allowed with --hf-config (the config sets it)")
        try:
            axes = axes_from_config(_read_json(args.hf_config))
        except (ValueError, TypeError) as exc:
            text = str(exc).replace("`config`", "the config")
            raise _Usage(f"argument --hf-config: {' '.join(text.split())}") from None
    elif args.axes_dim is not None:
        axes = {"axes_dim": list(args.axes_dim), "base": p.base, "split": "blocks", "grid_shape": None, "label": "axes"}
    else:
        if p.head_dim < 6:
            raise _Usage(
                f"argument --head-dim: the default figure splits the head over frames, rows and columns as Wan 2.1 "
                f"does (2 * (head_dim // 6) each for rows and columns), which needs at least 6, got {p.head_dim}; "
                "give the axes with --axes-dim"
            )
        axes = figures.default_axes(p.head_dim, p.base)
    if args.split is not None:
        axes["split"] = args.split
    if args.grid_shape is not None:
        axes["grid_shape"] = list(args.grid_shape)
    n = len(axes["axes_dim"])
    if axes.get("grid_shape") is not None and len(axes["grid_shape"]) != n:
        raise _Usage(f"argument --grid-shape: {len(axes['grid_shape'])} sizes for {n} axes")
    try:
        axes_frequencies(axes["axes_dim"], base=axes["base"], split=axes["split"])
    except (ValueError, TypeError) as exc:
        opt = "--hf-config" if args.hf_config is not None else "--axes-dim"
        raise _Usage(f"argument {opt}: {' '.join(str(exc).split())}") from None
    return replace(p, axes=axes)


def _audit(path: str, dtype: str | None) -> tuple[Any, str]:
    """The report of ``audit_rope`` of the config at ``path`` (printed) and its label."""
    config = _read_json(path)
    try:
        report = posenc.audit_rope(config, dtype=dtype)
    except ImportError as exc:
        raise _Usage(f"argument --hf-config: auditing a model needs torch and transformers ({exc})") from None
    except (ValueError, TypeError) as exc:
        raise _Usage(f"argument --hf-config: {' '.join(str(exc).split())}") from None
    if not any(m.audited for m in report):
        raise _Usage(f"argument --hf-config: no rotary module of {path!r} could be audited:\n{report}")
    print(report, flush=True)
    label = config.get("model_type")
    if not isinstance(label, str) or not label or len(label) > 64:
        label = Path(path).stem
    return report, label


def _prepare(args: argparse.Namespace) -> tuple[figures.Params, list[str] | None, bool]:
    """Parameters, figure names (None: the whole set) and whether posenc's
    own figures are drawn (the standard path of figure_set)."""
    command = args.command
    table_spec = getattr(args, "table", None)
    hf_config = getattr(args, "hf_config", None)
    layer_type = getattr(args, "layer_type", None)
    given = [name for name in SIZE_DEFAULTS if getattr(args, name, None) is not None]
    if table_spec is not None and given:
        raise _Usage(f"argument {_option(given[0])}: not allowed with --table (the table sets the figure)")
    if command == "rope-axes":
        hf_config, layer_type = None, None  # read below, as a multi-axis RoPE
    if hf_config is not None:
        clash = [n for n in given if n in ("base", "head_dim")]
        if clash:
            raise _Usage(f"argument {_option(clash[0])}: not allowed with --hf-config (the config sets it)")
    elif layer_type is not None:
        raise _Usage("argument --layer-type: only with --hf-config")
    sizes = {
        name: SIZE_DEFAULTS[name] if getattr(args, name, None) is None else getattr(args, name)
        for name in SIZE_DEFAULTS
    }
    p = figures.check_params(**sizes)
    if command == "all":
        return p, None, True
    if command == "audit":
        return replace(p, audit=_audit(hf_config, args.dtype)), ["rope_audit"], False
    name = COMMANDS[command][0] if command in COMMANDS else TABLE_COMMANDS[command][0]
    if table_spec is not None:
        p = replace(p, table=_read_table(table_spec, command))
    if command in TABLE_COMMANDS:
        if p.table.shape[0] - args.prefix > figures.MAX_GRID_MAPS:
            raise _Usage(f"argument --table: more than {figures.MAX_GRID_MAPS} patches to draw")
        try:
            options = {"grid_shape": "--grid", "num_prefix_tokens": "--prefix", "table": "--table"}
            grid = grid_layout(p.table.shape[0], args.grid, args.prefix, names=options)
        except (ValueError, TypeError) as exc:  # the message names --grid or --prefix
            raise _Usage(" ".join(str(exc).split())) from None
        p = replace(p, grid=grid)
    if table_spec is not None:
        note = _zero_rows(p.table, command, p.grid[0] if p.grid is not None else 0)
        if note is not None:
            print(note, file=sys.stderr)
    if hf_config is not None:
        p = replace(p, rope=_read_config(hf_config, layer_type))
    if command == "rope-axes":
        p = _prepare_axes(args, p)
        return p, [name], p.axes == figures.default_axes(p.head_dim, p.base)
    return p, [name], table_spec is None and hf_config is None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``posenc-viz``; returns the exit status."""
    parser, subs = _build()
    args = parser.parse_args(argv)
    subparser = subs[args.command]

    def progress(path: Path) -> None:
        print(f"wrote {path}", flush=True)

    error = None
    restore = _unwind_on_signals()
    try:
        p, names, standard = _prepare(args)
        if standard:
            figures.figure_set(
                args.out,
                dim=p.dim,
                length=p.length,
                base=p.base,
                layout=p.layout,
                head_dim=p.head_dim,
                formats=args.formats,
                dpi=args.dpi,
                column=args.column,
                names=names,
                force=args.force,
                progress=progress,
            )
        else:
            _mpl.require("matplotlib.figure")  # fail before touching the file system
            figures.write_set(
                args.out,
                p,
                tuple(names),
                args.formats,
                dpi=args.dpi,
                column=args.column,
                force=args.force,
                progress=progress,
            )
    except ImportError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except _Usage as exc:
        error = str(exc)
    except figures.OutputExistsError as exc:
        error = f"{exc.summary()}; nothing was written; pass --force to overwrite"
    except (OSError, ValueError, TypeError) as exc:
        error = _one_line(exc)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except _Terminated as exc:
        # unwound: the figure being written is removed; now end as the signal would have (by
        # default the process dies of it, so that a shell or a scheduler sees a terminated run)
        restore()
        signal.raise_signal(exc.signum)
        return 128 + exc.signum
    finally:
        restore()
    if error is not None:
        subparser.error(error)
    return 0


class _Terminated(BaseException):
    """SIGTERM or SIGHUP arrived while the command ran (raised like KeyboardInterrupt)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _unwind_on_signals() -> Any:
    """Until the returned function is called, SIGTERM and SIGHUP raise
    :class:`_Terminated`, so that the figure being written is removed as on
    Ctrl-C.  The first signal sets both to be ignored while the command
    unwinds; a signal that was ignored (``nohup``) stays ignored; outside the
    main thread nothing changes."""
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        for s in previous:
            signal.signal(s, signal.SIG_IGN)
        raise _Terminated(signum)

    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGHUP"):
            s = getattr(signal, name, None)
            if s is not None and signal.getsignal(s) not in (signal.SIG_IGN, None):
                previous[s] = signal.signal(s, handler)

    def restore() -> None:
        while previous:
            s, old = previous.popitem()
            signal.signal(s, old)

    return restore


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        text = f"cannot write {exc.filename!r}: {exc.strerror}"
    return " ".join(text.split())
