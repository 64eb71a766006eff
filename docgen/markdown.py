"""Markdown lines and number formats the blocks share."""

from __future__ import annotations

from qt_hard.experiments import report


def captioned(caption: str, head, body, align: str = "") -> str:
    """A caption line, a blank line, the Markdown table."""
    return join_lines(caption, "", report.markdown_table(head, body, align))


def join_lines(*parts) -> str:
    out = []
    for p in parts:
        out.extend(p if isinstance(p, list) else [p])
    return "\n".join(out)


def span(values, unit: str = " s") -> str:
    """``a-b`` (rounded to the second) of ``values``, or one value where they round alike."""
    lo, hi = round(min(values)), round(max(values))
    return f"{lo:,}{unit}" if lo == hi else f"{lo:,}-{hi:,}{unit}"


def measured_on(r: dict) -> str:
    """A benchmark row's context cells: the UTC date, the commit, threads and the 1-minute load average."""
    return f"{r['utc'][:10]}, {r['commit']}, {r['threads']} thread(s), load {r['load_average_1min']:.1f}"
