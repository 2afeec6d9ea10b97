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
    width: int = 720,
    height: int = 560,
) -> str:
    """Nodes at ``pos`` (in [-1, 1]^2) joined by ``edges``; ``notes`` are
    (x, y, text, colour) labels placed at graph coordinates, ``legend`` (colour, text) rows."""
    padx, pady = (130, 30) if labels else (16, 16)  # room for the labels beside the nodes

    def sx(x: float) -> float:
        return padx + (x + 1) / 2 * (width - 2 * padx)

    def sy(y: float) -> float:
        return pady + (1 - (y + 1) / 2) * (height - 2 * pady)

    out = _open(width, height, title)
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
        out.append(
            f'<circle cx="{sx(pos[i, 0]):.1f}" cy="{sy(pos[i, 1]):.1f}" r="{sizes[i]:.1f}" '
            f'fill="{colors[i]}" stroke="#fff" stroke-width="0.8">{tip}</circle>'
        )
        if labels:
            anchor = "start" if pos[i, 0] >= 0 else "end"
            dx = sizes[i] + 4 if pos[i, 0] >= 0 else -sizes[i] - 4
            out.append(
                f'<text x="{sx(pos[i, 0]) + dx:.1f}" y="{sy(pos[i, 1]) + 4:.1f}" text-anchor="{anchor}">'
                f"{escape(labels[i])}</text>"
            )
    for x, y, text, colour in notes:
        # Centred, and kept far enough from the edges that a label of ~50 characters fits.
        tx, ty = min(max(sx(x), width * 0.3), width * 0.7), min(max(sy(y), 14), height - 6)
        anchor = "middle"
        out.append(
            f'<text x="{tx:.1f}" y="{ty:.1f}" text-anchor="{anchor}" font-size="11" fill="{colour}" '
            f'stroke="#fff" stroke-width="3" paint-order="stroke">{escape(text)}</text>'
        )
    for n, (colour, text) in enumerate(legend):
        out.append(
            f'<circle cx="{12}" cy="{14 + 16 * n}" r="5" fill="{colour}"/>'
            f'<text x="22" y="{18 + 16 * n}" font-size="11">{escape(text)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def heatmap(matrix: npt.NDArray[np.float64], labels: Sequence[str], *, title: str, cell: int = 22) -> str:
    """A square matrix as shaded cells (white to blue), labelled on both axes."""
    n = len(labels)
    left = top = 130
    size = left + n * cell + 90  # the slanted column labels run past the last column
    out = _open(size + 70, size, title)
    vmax = float(matrix.max()) if n and matrix.max() > 0 else 1.0
    # The colour scale: white (0) to blue (the largest count), square-root spaced.
    sx0, sy0, sh = left + n * cell + 30, top, max(n * cell, 120)
    for k in range(20):
        t = k / 19
        r, g, b = (int(255 + (c - 255) * t) for c in (8, 81, 156))
        out.append(
            f'<rect x="{sx0}" y="{sy0 + sh * (1 - (k + 1) / 20):.1f}" width="14" height="{sh / 20 + 0.5:.1f}" '
            f'fill="rgb({r},{g},{b})"/>'
        )
    for frac in (0.0, 0.25, 1.0):
        v = vmax * frac
        y = sy0 + sh * (1 - math.sqrt(frac))
        out.append(f'<text x="{sx0 + 18}" y="{y + 4:.1f}" font-size="11">{_fmt(v)}</text>')
    out.append(f'<text x="{sx0}" y="{sy0 - 22}" font-size="11">records</text>')
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
                f'fill="rgb({r},{g},{b})" stroke="#e4e4e4" stroke-width="0.5"><title>{escape(labels[i])} &amp; {escape(labels[j])}: '
                f"{v:.0f}</title></rect>"
            )
    out.append("</svg>")
    return "\n".join(out)
