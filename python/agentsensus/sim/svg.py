"""Inline SVG figures, written by hand: no plotting library, no external resource.

Each function returns one ``<svg>`` element as a string, sized by a viewBox so
it scales with the page.
"""

from __future__ import annotations

import math
from html import escape
from typing import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from .layout import place_labels, text_width, wrap_text

__all__ = ["PALETTE", "line_chart", "bar_chart", "graph", "heatmap"]

#: Colour-blind-safe palette (Okabe-Ito), then greys.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000", "#999999", "#666666"]

_FONT = 'font-family="system-ui, -apple-system, Segoe UI, sans-serif"'


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    exp = 10.0 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * exp:
            return m * exp
    return 10 * exp


def _fmt(v: float) -> str:
    if v >= 100 or v == int(v):
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _open(w: int, h: int, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" role="img" '
        f'aria-label="{escape(title)}" {_FONT} font-size="12">',
        f"<title>{escape(title)}</title>",
    ]


def _legend(names: Sequence[str], x: float, y: float) -> list[str]:
    out = []
    for i, name in enumerate(names):
        yy = y + 18 * i
        out.append(f'<rect x="{x}" y="{yy - 9}" width="12" height="12" fill="{PALETTE[i % len(PALETTE)]}"/>')
        out.append(f'<text x="{x + 18}" y="{yy + 2}">{escape(name)}</text>')
    return out


def _axes(
    left: float, top: float, pw: float, ph: float, ymax: float, xlabel: str, ylabel: str, bottom: float = 50
) -> list[str]:
    out = [
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#333"/>',
    ]
    for i in range(5):
        v = ymax * i / 4
        y = top + ph - ph * i / 4
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(v)}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{top + ph + bottom - 14}" text-anchor="middle">{escape(xlabel)}</text>')
    out.append(
        f'<text transform="translate(14 {top + ph / 2}) rotate(-90)" text-anchor="middle">{escape(ylabel)}</text>'
    )
    return out


def line_chart(
    series: Mapping[str, Sequence[float]], *, title: str, xlabel: str, ylabel: str, width: int = 720, height: int = 360
) -> str:
    """One line per series over x = 0, 1, 2, ..."""
    left, top, right, bottom = 70, 20, 200, 50  # right: room for the longest legend label
    pw, ph = width - left - right, height - top - bottom
    n = max((len(v) for v in series.values()), default=0)
    ymax = _nice_max(max((max(v) for v in series.values() if len(v)), default=1))
    out = _open(width, height, title) + _axes(left, top, pw, ph, ymax, xlabel, ylabel)
    for t in range(0, n, max(1, math.ceil(n / 10))):
        x = left + pw * t / max(n - 1, 1)
        out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{t}</text>')
    for i, (name, ys) in enumerate(series.items()):
        pts = " ".join(f"{left + pw * t / max(n - 1, 1):.1f},{top + ph - ph * y / ymax:.1f}" for t, y in enumerate(ys))
        out.append(
            f'<polyline fill="none" stroke="{PALETTE[i % len(PALETTE)]}" stroke-width="2.2" points="{pts}">'
            f"<title>{escape(name)}</title></polyline>"
        )
    out += _legend(list(series), left + pw + 20, top + 12)
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(
    categories: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    width: int = 720,
    height: int = 360,
    slant: bool = False,
) -> str:
    """Grouped bars: one group per category, one bar per series (``None``: no bar).
    ``slant`` writes the category labels at an angle (long names)."""
    left, top, right, bottom = 70, 20, 200, (120 if slant else 50)  # right: room for the longest legend label
    height += bottom - 50
    pw, ph = width - left - right, height - top - bottom
    vals = [v for vs in series.values() for v in vs if v is not None]
    ymax = _nice_max(max(vals, default=1))
    out = _open(width, height, title) + _axes(left, top, pw, ph, ymax, xlabel, ylabel, bottom)
    groups = max(len(categories), 1)
    gw = pw / groups
    bw = gw * 0.8 / max(len(series), 1)
    for g, cat in enumerate(categories):
        x = left + gw * (g + 0.5)
        if slant:
            out.append(
                f'<text transform="translate({x:.1f} {top + ph + 12}) rotate(-40)" text-anchor="end">'
                f"{escape(cat)}</text>"
            )
        else:
            out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{escape(cat)}</text>')
        for s, (name, vs) in enumerate(series.items()):
            v = vs[g] if g < len(vs) else None
            if v is None:
                continue
            h = ph * v / ymax
            x = left + gw * g + gw * 0.1 + bw * s
            out.append(
                f'<rect x="{x:.1f}" y="{top + ph - h:.1f}" width="{bw:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[s % len(PALETTE)]}"><title>{escape(name)} {escape(cat)}: {v:.3g}</title></rect>'
            )
    out += _legend(list(series), left + pw + 20, top + 12)
    out.append("</svg>")
    return "\n".join(out)


def graph(
    pos: npt.NDArray[np.float64],
    edges: Sequence[tuple[int, int]],
    *,
    title: str,
    colors: Sequence[str],
    sizes: Sequence[float],
    labels: Sequence[str] | None = None,
    tips: Sequence[str] | None = None,
    edge_weights: Sequence[float] | None = None,
    notes: Sequence[tuple[float, float, str, str]] = (),
    legend: Sequence[tuple[str, str]] = (),
    hollow: Sequence[bool] | None = None,
    width: int = 720,
    height: int = 560,
) -> str:
    """Nodes at ``pos`` (in [-1, 1]^2) joined by ``edges``, each label beside its node where it overlaps
    no other label and no node (``layout.place_labels``; drawn as ``<text class="label">``).

    ``notes`` are (x, y, text, colour) cluster labels: a number at graph
    coordinates (x, y) and the whole text, wrapped, in a key under the plot.
    ``legend`` rows are (colour, text); ``hollow`` nodes are drawn as rings.
    """
    padx, pady = (110, 40) if labels else (16, 16)  # room for the labels around the nodes

    def sx(x: float) -> float:
        return padx + (x + 1) / 2 * (width - 2 * padx)

    def sy(y: float) -> float:
        return pady + (1 - (y + 1) / 2) * (height - 2 * pady)

    key_size, key_lines = 11.0, []
    for n, (_, _, text, colour) in enumerate(notes, 1):
        for k, line in enumerate(wrap_text(text, width - 40, key_size)):
            key_lines.append((f"{n}." if k == 0 else "", line, colour))
    total = height + (int(len(key_lines) * key_size * 1.35) + 12 if key_lines else 0)
    out = _open(width, total, title)
    wmax = max(edge_weights) if edge_weights else 1.0
    for i, (a, b) in enumerate(edges):
        w = (edge_weights[i] / wmax) if edge_weights else 0.3
        out.append(
            f'<line x1="{sx(pos[a, 0]):.1f}" y1="{sy(pos[a, 1]):.1f}" x2="{sx(pos[b, 0]):.1f}" '
            f'y2="{sy(pos[b, 1]):.1f}" stroke="#888" stroke-opacity="{0.15 + 0.6 * w:.2f}" '
            f'stroke-width="{0.5 + 5 * w if edge_weights else 0.6:.2f}"/>'
        )
    for i in range(len(pos)):
        tip = f"<title>{escape(tips[i])}</title>" if tips else ""
        paint = (
            f'fill="#fff" stroke="{colors[i]}" stroke-width="1.5"'
            if hollow and hollow[i]
            else f'fill="{colors[i]}" stroke="#fff" stroke-width="0.8"'
        )
        out.append(
            f'<circle cx="{sx(pos[i, 0]):.1f}" cy="{sy(pos[i, 1]):.1f}" r="{sizes[i]:.1f}" {paint}>{tip}</circle>'
        )
    legend_box = (0.0, 0.0, 0.0, 0.0)
    if legend:
        legend_box = (0.0, 0.0, 26 + max(text_width(t, 11) for _, t in legend), 20 + 16 * len(legend))
    for n, (colour, text) in enumerate(legend):
        out.append(
            f'<circle cx="{12}" cy="{14 + 16 * n}" r="5" fill="{colour}"/>'
            f'<text x="22" y="{18 + 16 * n}" font-size="11">{escape(text)}</text>'
        )
    if labels:
        anchors = [(sx(pos[i, 0]), sy(pos[i, 1])) for i in range(len(pos))]
        boxes = place_labels(
            anchors,
            [float(r) + 1 for r in sizes],
            [(text_width(lab, 12), 12 * 1.2) for lab in labels],
            bounds=(0.0, 0.0, float(width), float(height)),
            obstacles=[legend_box],
            outward=(width / 2, height / 2),
        )
        for i, (box, lab) in enumerate(zip(boxes, labels)):
            ax, ay = anchors[i]
            # A label pushed away from its node keeps a thin line back to it.
            if max(box[0] - ax, ax - box[2], box[1] - ay, ay - box[3]) > sizes[i] + 8:
                lx, ly = min(max(ax, box[0]), box[2]), min(max(ay, box[1]), box[3])
                out.append(
                    f'<line x1="{ax:.1f}" y1="{ay:.1f}" x2="{lx:.1f}" y2="{ly:.1f}" stroke="#aaa" stroke-width="0.6"/>'
                )
            out.append(
                f'<text class="label" x="{box[0]:.1f}" y="{box[1] + 0.95 * 12:.1f}" font-size="12">{escape(lab)}</text>'
            )
    if notes:
        marks = place_labels(
            [(sx(x), sy(y)) for x, y, _, _ in notes],
            [0.0] * len(notes),
            [(text_width(str(n), 12) + 8, 12 * 1.2 + 2) for n in range(1, len(notes) + 1)],
            bounds=(0.0, 0.0, float(width), float(height)),
            obstacles=[legend_box],
        )
        for n, (box, (_, _, _, colour)) in enumerate(zip(marks, notes), 1):
            out.append(
                f'<rect x="{box[0]:.1f}" y="{box[1]:.1f}" width="{box[2] - box[0]:.1f}" height="{box[3] - box[1]:.1f}" '
                f'rx="3" fill="#fff" stroke="{colour}"/><text class="mark" x="{(box[0] + box[2]) / 2:.1f}" '
                f'y="{box[1] + 1 + 0.95 * 12:.1f}" text-anchor="middle" font-weight="bold" fill="{colour}">{n}</text>'
            )
        y: float = height + 4
        for num, line, colour in key_lines:
            y += key_size * 1.35
            out.append(
                f'<text class="key" x="8" y="{y:.1f}" font-size="{key_size:g}" fill="{colour}">'
                f'<tspan font-weight="bold">{num}</tspan><tspan x="30">{escape(line)}</tspan></text>'
            )
    out.append("</svg>")
    return "\n".join(out)


def _scale_ticks(vmax: float) -> list[float]:
    """Whole counts for a square-root colour scale: 0, about 1/16, 1/4 and all of ``vmax``."""
    ticks = sorted({0.0, float(vmax)} | {float(round(vmax * f)) for f in (1 / 16, 1 / 4) if round(vmax * f) > 0})
    return ticks


def heatmap(matrix: npt.NDArray[np.float64], labels: Sequence[str], *, title: str, cell: int = 22) -> str:
    """A square matrix as shaded cells, labelled on both axes.

    The shade is the square root of the count over the largest (white at 0,
    blue at the largest), so that small counts stay visible; the legend beside
    the cells names the scale and marks whole counts on it.
    """
    n = len(labels)
    left = top = 130
    size = left + n * cell + 90  # the slanted column labels run past the last column
    # Wide enough for the title, and never so small that the page scales a few cells up to giants.
    width = max(size + 150, 560, int(text_width(title, 12) * 1.1) + 16)
    out = _open(width, max(size, top + 150), title)
    out.append(f'<text x="8" y="18" font-weight="bold">{escape(title)}</text>')
    vmax = float(matrix.max()) if n and matrix.max() > 0 else 1.0
    # The colour scale: white (0) to blue (the largest count), square-root spaced.
    sx0, sy0, sh = left + n * cell + 50, top, max(n * cell, 120)
    for k in range(20):
        t = k / 19
        r, g, b = (int(255 + (c - 255) * t) for c in (8, 81, 156))
        out.append(
            f'<rect x="{sx0}" y="{sy0 + sh * (1 - (k + 1) / 20):.1f}" width="14" height="{sh / 20 + 0.5:.1f}" '
            f'fill="rgb({r},{g},{b})"/>'
        )
    for v in _scale_ticks(vmax):
        y = sy0 + sh * (1 - math.sqrt(v / vmax))
        out.append(f'<line x1="{sx0 + 14}" y1="{y:.1f}" x2="{sx0 + 18}" y2="{y:.1f}" stroke="#333"/>')
        out.append(f'<text x="{sx0 + 21}" y="{y + 4:.1f}" font-size="11">{_fmt(v)}</text>')
    out.append(f'<text class="scale" x="{sx0}" y="{sy0 - 34}" font-size="11">records shared</text>')
    out.append(f'<text class="scale" x="{sx0}" y="{sy0 - 20}" font-size="11">(square-root scale)</text>')
    for i in range(n):
        y = top + i * cell
        out.append(f'<text x="{left - 6}" y="{y + cell * 0.7:.1f}" text-anchor="end">{escape(labels[i])}</text>')
        x = left + i * cell
        out.append(
            f'<text transform="translate({x + cell * 0.65:.1f} {top - 6}) rotate(-60)">{escape(labels[i])}</text>'
        )
        for j in range(n):
            v = float(matrix[i, j])
            t = math.sqrt(v / vmax) if vmax else 0.0  # sqrt: small counts stay visible
            r, g, b = (int(255 + (c - 255) * t) for c in (8, 81, 156))
            out.append(
                f'<rect x="{left + j * cell}" y="{y}" width="{cell - 1}" height="{cell - 1}" '
                f'fill="rgb({r},{g},{b})" stroke="#e4e4e4" stroke-width="0.5"><title>{escape(labels[i])} &amp; '
                f"{escape(labels[j])}: {v:.0f}</title></rect>"
            )
    out.append("</svg>")
    return "\n".join(out)
