"""One document written twice: Markdown (PNG files linked) and self-contained HTML (PNGs
embedded as base64 data URIs, inline CSS, no scripts), from the same calls.

    doc = Document("Load test report")
    doc.heading("Endpoints")
    doc.table(["endpoint", "p99 (ms)"], [["identity [grpc]", "1.234"]])
    doc.image("latency_over_time.png", png_bytes, "Latency percentiles over time")
    doc.write(out_dir, "report")          # out_dir/report.md, report.html and the PNGs
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1400px;
       padding: 0 1em; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #76b900; padding-bottom: .2em; }
h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; }
/* A wide table shows its chosen columns (they fit 1,400 px); the full table is in <details>,
   and scrolls inside its own box, never the page. */
div.table-wrap { overflow-x: auto; max-width: 100%; margin: .8em 0; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; border: 1px solid #eee; margin: .5em 0; }
p.note { color: #555; font-size: .9em; }
p.outcome { font-size: 1.1em; font-weight: 600; border-left: 4px solid #444; padding-left: .6em; }
details { margin: -.4em 0 .8em; }
summary { cursor: pointer; color: #555; font-size: .9em; }
ol.steps li { margin-bottom: .7em; }
ol.steps code { background: #f3f3f3; padding: .1em .3em; display: inline-block; word-break: break-all; }
"""


class Document:
    def __init__(self, title: str) -> None:
        self.title = title
        self._md: list[str] = [f"# {title}", ""]
        self._html: list[str] = [f"<h1>{html.escape(title)}</h1>"]
        self.images: dict[str, bytes] = {}

    def heading(self, text: str, level: int = 2) -> None:
        self._md += [f"{'#' * level} {text}", ""]
        self._html.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def outcome(self, text: str) -> None:
        """The line right under the title that says what happened (bold)."""
        self._md += [f"**{text}**", ""]
        self._html.append(f'<p class="outcome">{html.escape(text)}</p>')

    def paragraph(self, text: str, note: bool = False) -> None:
        self._md += [f"_{text}_" if note else text, ""]
        css = ' class="note"' if note else ""
        self._html.append(f"<p{css}>{html.escape(text)}</p>")

    def bullets(self, items: list[str]) -> None:
        if not items:
            return
        self._md += [f"- {item}" for item in items] + [""]
        self._html.append("<ul>" + "".join(f"<li>{html.escape(item)}</li>" for item in items) + "</ul>")

    def numbered(self, items: list[tuple[str, list[str], str]]) -> None:
        """A ranked list: each item a bold title, lines under it, and a command (may be "")."""
        if not items:
            return
        for number, (title, lines, command) in enumerate(items, 1):
            self._md.append(f"{number}. **{title}**")
            self._md += [f"   {line}" for line in lines]
            if command:
                self._md.append(f"   `{command}`")
        self._md.append("")
        entries = []
        for title, lines, command in items:
            body = "".join(f"<br>{html.escape(line)}" for line in lines)
            code = f"<br><code>{html.escape(command)}</code>" if command else ""
            entries.append(f"<li><strong>{html.escape(title)}</strong>{body}{code}</li>")
        self._html.append('<ol class="steps">' + "".join(entries) + "</ol>")

    def definitions(self, pairs: list[tuple[str, str]]) -> None:
        """A two-column key/value table (the report header)."""
        self.table(["", ""], [[key, value] for key, value in pairs], header=False)

    def table(self, headers: list[str], rows: list[list[str]], header: bool = True, compact: set | None = None) -> None:
        """A table; with `compact` (header names), the HTML shows those columns, less any whose
        every cell is 0 or empty, and the full table one click away in <details>. Markdown
        keeps the full table."""
        if not rows:
            return
        if header:
            self._md.append("| " + " | ".join(_md_cell(h) for h in headers) + " |")
        else:
            self._md.append("| " + " | ".join(" " for _ in headers) + " |")
        self._md.append("|" + "|".join(" ---: " if _numeric(rows, i) else " --- " for i in range(len(headers))) + "|")
        self._md += ["| " + " | ".join(_md_cell(cell) for cell in row) + " |" for row in rows]
        self._md.append("")
        keep = _compact_columns(headers, rows, compact) if compact and header else list(range(len(headers)))
        if len(keep) == len(headers):
            self._html.append(_html_table(headers, rows, header))
            return
        self._html.append(_html_table([headers[i] for i in keep], [[row[i] for i in keep] for row in rows], True))
        self._html.append(
            f"<details><summary>All {len(headers)} columns</summary>\n{_html_table(headers, rows, True)}\n</details>"
        )

    def noted_table(self, title: str, note: str, headers: list[str], rows: list[list[str]]) -> None:
        """A section of one table under a heading and a note; nothing without rows."""
        if rows:
            self.heading(title)
            self.paragraph(note, True)
            self.table(headers, rows)

    def image(self, filename: str, png: bytes, alt: str) -> None:
        self.images[filename] = png
        self._md += [f"![{alt}]({filename})", ""]
        data = base64.b64encode(png).decode("ascii")
        self._html.append(f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">')

    def markdown(self) -> str:
        return "\n".join(self._md).rstrip() + "\n"

    def html(self) -> str:
        body = "\n".join(self._html)
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{html.escape(self.title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
        )

    def write(self, out_dir: Path, stem: str, image_prefix: str = "") -> Path:
        """Write <stem>.md, <stem>.html and the PNGs into out_dir; returns the HTML path."""
        out_dir.mkdir(parents=True, exist_ok=True)
        for filename, png in self.images.items():
            (out_dir / filename).write_bytes(png)
        (out_dir / f"{stem}.md").write_text(self.markdown())
        path = out_dir / f"{stem}.html"
        path.write_text(self.html())
        return path


def _html_table(headers: list[str], rows: list[list[str]], header: bool) -> str:
    out = ['<div class="table-wrap"><table>']
    if header:
        out.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in headers) + "</tr>")
    for row in rows:
        cells = "".join(
            f'<td class="num">{html.escape(c)}</td>' if _is_number(c) else f"<td>{html.escape(c)}</td>" for c in row
        )
        out.append(f"<tr>{cells}</tr>")
    out.append("</table></div>")
    return "\n".join(out)


def _compact_columns(headers: list[str], rows: list[list[str]], compact: set) -> list[int]:
    """The first column and the chosen ones, less those always 0 or empty (closed-loop late, say)."""
    return [
        i
        for i, title in enumerate(headers)
        if i == 0 or (title in compact and not all(row[i] in ("0", "", "n/a", "none") for row in rows))
    ]


def _is_number(text: str) -> bool:
    try:
        float(text.replace("x", "").replace("%", "").replace("+", "").replace(",", ""))
    except ValueError:
        return False
    return True


def _numeric(rows: list[list[str]], column: int) -> bool:
    cells = [row[column] for row in rows if column < len(row) and row[column] not in ("", "n/a")]
    return bool(cells) and all(_is_number(cell) for cell in cells)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
