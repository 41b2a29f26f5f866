"""HTML as a mail client shows it, as text. Pure (no I/O).

Read by a tokenizer of our own that never looks at a character twice (the stdlib's HTMLParser
rescans to the end of the input for every unclosed tag: minutes for 100 KB). What a mail
client does not show (display:none, zero size, `<head>`, scripts) is not read, and quote
blocks, signatures and Outlook's quoted history are left out.
"""

from __future__ import annotations

import re
from html import unescape

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
_BLOCK = {
    "address", "article", "aside", "blockquote", "center", "dd", "div", "dl", "dt", "figure", "footer",
    "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre",
    "section", "table", "tr", "ul",
}
_NOT_SHOWN = {"head", "style", "script", "template", "title"}
# Quote blocks and signatures: skipped, and text after them is new again (Thunderbird's
# bottom posting puts the reply after the quote).
_QUOTE_MARKERS = (
    "gmail_quote", "moz-cite-prefix", "yahoo_quoted", "protonmail_quote", "gmail_signature", "moz-signature",
)
# Outlook's markers: everything from them on is the quoted message.
_HISTORY_MARKERS = ("divrplyfwdmsg", "appendonsend", "outlookmessageheader", "mail-editor-reference-message")
_ZERO = re.compile(r"[0.]+(?:px|pt|em|rem|%)?")


def _hides(style: str) -> bool:
    """Whether an inline style hides its element: display:none, visibility:hidden, Outlook's
    mso-hide, a zero font size or opacity, or a zero height or width with overflow hidden."""
    decls = {}
    for declaration in style.lower().split(";"):
        name, _, value = declaration.partition(":")
        decls[name.strip()] = value.replace("!important", "").strip()

    def zero(*names: str) -> bool:
        return any(_ZERO.fullmatch(decls.get(name, "")) for name in names)

    return (
        decls.get("display") == "none" or decls.get("visibility") in ("hidden", "collapse")
        or decls.get("mso-hide") == "all" or zero("font-size", "opacity")
        or (decls.get("overflow") == "hidden" and zero("height", "max-height", "width", "max-width"))
    )


# The tokenizer (HTML5's rules, simplified). Every pattern is possessive, and whatever it
# searches for is searched for once: a tag, comment or declaration that the end of the input
# cuts off ends the reading (HTML5 drops it too), so no character is looked at twice.
_START_TAG = re.compile(r"<([a-zA-Z][^\s/>]*+)((?:[^>=]++|=\s*+(?:\"[^\"]*+\"|'[^']*+')|=)*+)>")
_END_TAG = re.compile(r"</([a-zA-Z][^\s/>]*+)[^>]*+>")
_ATTRIBUTE = re.compile(r"([^\s/>=]++)(?:\s*+=\s*+(\"[^\"]*+\"|'[^']*+'|[^\s>]*+))?")
_RAW_TEXT = {  # their content is text up to their end tag, never markup
    name: re.compile(rf"</{name}(?=[\s/>])", re.I) for name in ("script", "style")
}


def _attributes(text: str) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    for m in _ATTRIBUTE.finditer(text):
        value = m[2]
        if value is not None and len(value) > 1 and value[0] in "\"'" and value[-1] == value[0]:
            value = value[1:-1]
        found.append((m[1].lower(), None if value is None else unescape(value)))
    return found


class _Text:
    """HTML mail -> the text a mail client shows, without quote blocks.

    Left out: what a client never shows (head, style, script), elements hidden by their own
    attributes (`hidden`, or a style `_hides`), quote blocks and signatures, and everything
    from an Outlook reply header on. Text hidden by other means (the
    background's colour, CSS classes) is not detected: HTML-only mail never approves."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.skip_tag: str | None = None
        self.skip_depth = 0
        self.pre = 0
        self.done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.done:
            return
        if self.skip_tag is not None:
            if tag == self.skip_tag and tag not in _VOID:
                self.skip_depth += 1
            return
        values = dict(attrs)
        marker = " ".join(v for k, v in attrs if k in ("class", "id") and v).lower()
        if any(m in marker for m in _HISTORY_MARKERS):
            self.done = True
            return
        hidden = "hidden" in values or _hides(values.get("style") or "")
        if tag in _NOT_SHOWN or tag == "blockquote" or hidden or any(m in marker for m in _QUOTE_MARKERS):
            if tag not in _VOID:
                self.skip_tag, self.skip_depth = tag, 1
            if tag in _BLOCK:
                self._newline()
            return
        if tag == "br":
            self.parts.append("\n")
        elif tag in _BLOCK:
            self._newline()
        if tag == "pre":
            self.pre += 1

    def handle_endtag(self, tag: str) -> None:
        if self.done:
            return
        if self.skip_tag is not None:
            if tag == self.skip_tag:
                self.skip_depth -= 1
                if not self.skip_depth:
                    self.skip_tag = None
            return
        if tag in _BLOCK:
            self._newline()
        if tag == "pre" and self.pre:
            self.pre -= 1

    def handle_data(self, data: str) -> None:
        if self.done or self.skip_tag is not None:
            return
        if not self.pre:
            data = re.sub(r"[ \t\r\n\f\xa0]+", " ", data)  # HTML collapses white space
            if not self.parts or self.parts[-1].endswith("\n"):
                data = data.lstrip(" ")  # and drops it at the start of a line
        if data:
            self.parts.append(data)

    def _newline(self) -> None:
        if self.parts and not self.parts[-1].endswith("\n"):
            self.parts.append("\n")

    def read(self, doc: str) -> None:
        """Tokenize `doc` and hand its tags and text to the methods above, in one pass."""
        i, n = 0, len(doc)
        while i < n and not self.done:
            j = doc.find("<", i)
            j = n if j < 0 else j
            if i < j:
                self.handle_data(unescape(doc[i:j]))
            i = self._markup(doc, j) if j < n else n

    def _markup(self, doc: str, i: int) -> int:
        """Read the markup at doc[i] ("<"); where the text after it starts."""
        n = len(doc)
        after = doc[i + 1:i + 2]
        if after.isascii() and after.isalpha():
            if not (tag := _START_TAG.match(doc, i)):
                return n  # cut off by the end of the input: nothing more is shown
            name = tag[1].lower()
            self.handle_starttag(name, _attributes(tag[2]))
            if name not in _RAW_TEXT:
                return tag.end()
            closing = _RAW_TEXT[name].search(doc, tag.end())
            stop = closing.start() if closing else n
            self.handle_data(doc[tag.end():stop])
            return stop
        if doc.startswith("</", i):
            if (tag := _END_TAG.match(doc, i)) is not None:
                self.handle_endtag(tag[1].lower())
                return tag.end()
            if doc[i + 2:i + 3].isascii() and doc[i + 2:i + 3].isalpha():
                return n  # cut off by the end of the input
        elif doc.startswith("<!--", i):
            for empty in ("<!-->", "<!--->"):
                if doc.startswith(empty, i):
                    return i + len(empty)
            end = doc.find("-->", i + 4)
            return n if end < 0 else end + 3
        elif not doc.startswith(("<!", "<?"), i):
            self.handle_data("<")  # "a < b": text
            return i + 1
        # "</>", "</ ...>", "<!DOCTYPE ...>", "<?xml ...>": a declaration or a bogus comment
        end = doc.find(">", i + 2)
        return n if end < 0 else end + 1


def html_to_text(html: str) -> str:
    parser = _Text()
    parser.read(html)
    lines = [line.strip(" \t") for line in "".join(parser.parts).split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
