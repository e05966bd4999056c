"""The house style every chart is drawn in, and the inline-safe SVG it is written as.

matplotlib is used through its object API (`Figure` + the SVG canvas), never pyplot: no global state, safe in
threads and Celery workers, no display needed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import math
import re
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from protocol.numbers import number
from registry.presentation.words import HEADLINE_STYLE

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

# Sober, colour-blind-safe (Okabe-Ito) colours; the first is the registry's ink blue.
PALETTE = ("#1f4e79", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#0072b2", "#999999")
# Point markers, cycled once every colour has been used: a chart's legend can hold more entries than PALETTE has
# colours (a decision's Pareto chart holds about twenty a part), and two entries alike in colour and shape could not
# be told apart. len(PALETTE) × len(MARKERS) consecutive entries are each unlike the others.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def point_style(n: int) -> tuple[str, str]:
    """The colour and marker of the n-th entry of a chart's legend."""
    return PALETTE[n % len(PALETTE)], MARKERS[n // len(PALETTE) % len(MARKERS)]


WIDTH_IN = 6.6
STYLE: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 8.5,
    "axes.titlesize": 9.5,
    "axes.titleweight": "bold",
    "axes.labelsize": 8.5,
    "axes.edgecolor": "#555555",
    "axes.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.5,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "svg.fonttype": "none",
    "svg.hashsalt": "benchreg",
    "figure.dpi": 72,
    # Submitter text (names with `$`, backslashes) is drawn as written, never parsed as mathtext or TeX.
    "text.parse_math": False,
    "text.usetex": False,
}
_ID = re.compile(r'\bid="([^"]+)"')
_SIZE = re.compile(r'<svg [^>]*?width="(?P<width>[\d.]+)pt" height="(?P<height>[\d.]+)pt"')

# A report's page (A4 with 18 mm side and 20 mm top and bottom margins: templates/reports/decision.css) shows a chart
# 174 mm wide. With a heading above it and its caption below, a chart up to FIGURE_MAX_MM tall fits one page; the
# stylesheet caps images at the same height, and a chart taller than that is drawn in parts (page_parts).
CONTENT_WIDTH_MM = 174.0
FIGURE_MAX_MM = 225.0
MAX_ASPECT = FIGURE_MAX_MM / CONTENT_WIDTH_MM  # height over width of the tallest chart a page holds whole

T = TypeVar("T")


# matplotlib is loaded on the first chart drawn, not when this module is imported: importing it costs about half a
# second, which every command, test worker and page process would pay (the reports code imports the charts).
@functools.cache
def _load_matplotlib() -> None:
    import matplotlib

    matplotlib.use("Agg")  # before anything else of matplotlib draws: never a GUI backend on a server


@contextlib.contextmanager
def rc_context(rc: Mapping[RcKeyType, Any]) -> Iterator[None]:
    """matplotlib's rc_context (the house STYLE, and a chart's own additions), matplotlib loaded on first use."""
    _load_matplotlib()
    import matplotlib

    with matplotlib.rc_context(dict(rc)):
        yield


def new_figure(**kwargs: Any) -> Figure:
    """A matplotlib Figure (its object API: no pyplot), matplotlib loaded on first use."""
    _load_matplotlib()
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def finite(value: Any) -> float | None:
    """`value` as a float when it is a finite number (not True/False), else None: what a chart can plot."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def title(ax: Any, text: str) -> None:
    """A panel title wrapped to the figure's width (long configuration names never run off the edge)."""
    ax.set_title("\n".join(textwrap.wrap(text, 48, break_long_words=True)) or text, loc="left")


def value_label(ax: Any, x: float, y: float, value: float) -> None:
    """The value printed just right of x (an offset in points: SVG text would collapse leading spaces)."""
    ax.annotate(
        number(value, HEADLINE_STYLE),  # the value as the tables beside the chart print it
        (x, y),
        xytext=(4, 0),
        textcoords="offset points",
        va="center",
        ha="left",
        fontsize=8,
        zorder=4,
    )


def svg(fig: Figure, kind: str, data: Any) -> str:
    """The figure as inline-safe SVG with ids scoped by a prefix unique to this chart's kind and data."""
    if not fig.get_tight_layout() and not fig.get_constrained_layout():
        fig.tight_layout()
    from matplotlib.backends.backend_svg import FigureCanvasSVG  # loaded already: `fig` is matplotlib's

    buffer = io.StringIO()
    # bbox_inches="tight": a legend placed below its axes (outside them) is saved whole, never cut at the edge.
    FigureCanvasSVG(fig).print_figure(
        buffer, format="svg", bbox_inches="tight", pad_inches=0.05, metadata={"Date": None, "Creator": None}
    )
    text = buffer.getvalue()
    text = text[text.index("<svg") :]  # drop the XML declaration and DOCTYPE: inline HTML has neither
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)  # matplotlib's comments repeat label text; not needed
    seed = json.dumps(data, sort_keys=True, default=str).encode()
    prefix = f"c{kind[:4]}{hashlib.sha256(seed).hexdigest()[:8]}"
    # matplotlib's <style> says `*{...}`, which inline in HTML would style the whole page: scope it to this chart.
    text = text.replace("<svg ", f'<svg class="benchreg-chart {prefix}" ', 1).replace("*{", f".{prefix} *{{")
    return _scope_ids(text, prefix)


def _scope_ids(markup: str, prefix: str) -> str:
    ids = set(_ID.findall(markup))
    if not ids:
        return markup

    def rename(match: re.Match[str]) -> str:
        whole, name = match.group(0), match.group(1)
        return whole.replace(name, f"{prefix}-{name}") if name in ids else whole

    markup = _ID.sub(rename, markup)
    return re.sub(
        r"#([A-Za-z_][\w.\-]*)", lambda m: f"#{prefix}-{m.group(1)}" if m.group(1) in ids else m.group(0), markup
    )


def aspect(markup: str) -> float:
    """Height over width of an SVG chart of svg(): the page height it takes, in page widths."""
    size = _SIZE.search(markup)
    if size is None:
        raise ValueError("not a chart of chart_style.svg: its <svg> element states no width and height in pt")
    return float(size["height"]) / float(size["width"])


def page_parts(draw: Callable[[Sequence[T]], str | None], items: Sequence[T]) -> list[str]:
    """`draw(items)` as one chart where it fits a report's page (MAX_ASPECT), else the fewest charts of
    consecutive items, near-equal in count and in order, of which each fits: a chart is never cut by a page
    break, nor shrunk until it is unreadable. One item per chart is the end (the stylesheet then caps its height).
    Charts that draw nothing are left out; [] when none draws anything."""
    parts = 1
    while True:
        drawn = [draw(chunk) for chunk in _chunks(items, parts)]
        tallest = max((aspect(s) for s in drawn if s is not None), default=0.0)
        if tallest <= MAX_ASPECT or parts >= len(items):
            return [s for s in drawn if s is not None]
        # The next guess scales the largest part by how far it is over; a chart's title and axes do not shrink
        # with it, so the guess can fall short, and the loop tries again with one more part at least.
        largest = -(-len(items) // parts)
        fits = max(1, int(largest * MAX_ASPECT / tallest))
        parts = min(len(items), max(parts + 1, -(-len(items) // fits)))


def _chunks(items: Sequence[T], parts: int) -> list[Sequence[T]]:
    """`items` in `parts` consecutive runs whose lengths differ by one at most (the longer ones first)."""
    size, extra = divmod(len(items), parts)
    bounds = [k * size + min(k, extra) for k in range(parts + 1)]
    return [items[bounds[k] : bounds[k + 1]] for k in range(parts) if bounds[k] < bounds[k + 1]]
