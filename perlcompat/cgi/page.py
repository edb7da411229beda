"""CGI.pm's ``start_html()`` and ``end_html()``, byte for byte (tests/test_cgi_page.py).

``start_html(title="Guestbook", bgcolor="#ffffff", lang="ja", encoding="Shift_JIS")``
is ``start_html(-title => 'Guestbook', -bgcolor => '#ffffff', -lang => 'ja',
-encoding => 'Shift_JIS')``: the XHTML 1.0 Transitional DOCTYPE, ``<html ...
lang="ja" xml:lang="ja">``, the escaped title, a ``Content-Type`` meta tag, and
``<body bgcolor="#ffffff">``.  Known keywords: ``title``, ``author``, ``base``,
``xbase``, ``target``, ``meta`` (a dict), ``head`` (a str or a list), ``style``,
``script``, ``noscript``, ``dtd``, ``lang``, ``encoding``, ``declare_xml``; any other
keyword is an attribute of ``<body>`` (lower case, ``_`` as ``-``, sorted, escaped).
As in CGI.pm, a DTD of HTML 2.0, 3.2 or 4.01 (``dtd=1`` gives 4.01) turns XHTML off
for the rest of the process (``perlcompat.cgi.XHTML``, CGI.pm's ``$CGI::XHTML``).
"""

from __future__ import annotations

import re

from ..perl.text import truth
from .util import escape, escapeHTML

TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import CGI

DEFAULT_DTD = ("-//W3C//DTD HTML 4.01 Transitional//EN", "http://www.w3.org/TR/html4/loose.dtd")
XHTML_DTD = (
    "-//W3C//DTD XHTML 1.0 Transitional//EN",
    "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd",
)
_ORDER = (
    "title",
    "author",
    "base",
    "xbase",
    "script",
    "noscript",
    "target",
    "meta",
    "head",
    "style",
    "dtd",
    "lang",
    "encoding",
    "declare_xml",
)


def attributes(attrs: dict[str, object]) -> list[str]:
    """CGI::Util's ``make_attributes`` (escaping): ``key="value"`` sorted, lower case, ``-``."""
    made = []
    for key, value in attrs.items():
        name = key.lstrip("-").lower().replace("_", "-")
        if value is None:
            made.append(name)
        else:
            text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            made.append(f'{name}="{text.replace(chr(34), "&quot;")}"')
    return sorted(made)


def _options(
    args: tuple[object, ...], options: dict[str, object]
) -> tuple[dict[str, object], dict[str, object]]:
    known: dict[str, object] = dict(zip(_ORDER, args))
    if len(args) > len(_ORDER):
        raise TypeError(f"start_html() takes at most {len(_ORDER)} positional arguments")
    other: dict[str, object] = {}
    for key, value in options.items():
        name = key.lstrip("-").lower()
        if name in _ORDER:
            known[name] = value
        else:
            other[name] = value
    return known, other


def start_html(
    q: CGI, args: tuple[object, ...], options: dict[str, object], xhtml: bool
) -> tuple[str, bool]:
    """``q->start_html(@args, %options)`` and the new XHTML setting."""
    known, other = _options(args, options)
    get = known.get
    encoding = get("encoding")
    if encoding is None:
        encoding = re.sub("[A-Z]+", lambda m: m[0].lower(), q.charset())
    dtd = get("dtd")
    if truth(dtd) if not isinstance(dtd, (list, tuple)) else True:
        first = dtd[0] if isinstance(dtd, (list, tuple)) and dtd else dtd
        if not re.match("-//", str(first if first is not None else "")):
            dtd = DEFAULT_DTD
    else:
        dtd = XHTML_DTD if xhtml else DEFAULT_DTD
    result: list[str] = []
    public = str(dtd[0] if isinstance(dtd, (list, tuple)) else dtd)
    declare_xml = truth(get("declare_xml"))
    if re.search(r"\bXHTML\b", public, re.I) and declare_xml:
        result.append(f'<?xml version="1.0" encoding="{encoding}"?>')
    if isinstance(dtd, (list, tuple)):
        system = dtd[1] if len(dtd) > 1 and dtd[1] is not None else ""
        result.append(f'<!DOCTYPE html\n\tPUBLIC "{public}"\n\t "{system}">')
    else:
        result.append(f'<!DOCTYPE html\n\tPUBLIC "{public}">')
    title = get("title")
    title = escapeHTML(str(title) if truth(title) else "Untitled Document") or ""
    author = get("author")
    lang = get("lang")
    if re.search(r"[^X]HTML (2\.0|3\.2|4\.01?)", public, re.I):
        lang = "" if lang is None else lang
        xhtml = False
    elif lang is None:
        lang = "en-US"
    lang = str(lang)
    lang_bits = f' lang="{lang}" xml:lang="{lang}"' if lang != "" else ""
    meta_bits = None
    if xhtml and truth(encoding) and not declare_xml:
        meta_bits = f'<meta http-equiv="Content-Type" content="text/html; charset={encoding}" />'
    if xhtml:
        result.append(
            f'<html xmlns="http://www.w3.org/1999/xhtml"{lang_bits}>\n<head>\n<title>{title}</title>'
        )
    else:
        result.append(
            (f'<html lang="{lang}">' if truth(lang) else "<html>") + f"<head><title>{title}</title>"
        )
    end = " />" if xhtml else ">"
    if author is not None:
        result.append(f'<link rev="made" href="mailto:{escape(str(author))}"{end}')
    base, xbase, target = get("base"), get("xbase"), get("target")
    if truth(base) or truth(xbase) or truth(target):
        href = xbase if truth(xbase) else q.url(path_info=1)
        shown = f' target="{target}"' if truth(target) else ""
        result.append(f'<base href="{href}"{shown}{end}')
    meta = get("meta")
    if isinstance(meta, dict):
        result += [f'<meta name="{k}" content="{meta[k]}"{end}' for k in sorted(meta)]
    head = get("head")
    meta_set = False
    if isinstance(head, (list, tuple)):
        result += [str(h) for h in head]
        meta_set = any(re.search("http-equiv=[\"']Content-Type", str(h), re.I) for h in head)
    elif truth(head):
        result.append(str(head))
        meta_set = re.search("http-equiv=[\"']Content-Type", str(head), re.I) is not None
    if get("style") is not None:
        result += _style(get("style"), xhtml)
    if get("script") is not None:
        result += _script(get("script"), xhtml)
    if meta_bits is not None and not meta_set:
        result.append(meta_bits)
    noscript = get("noscript")
    if truth(noscript):
        result.append(f"<noscript>\n{noscript}\n</noscript>\n")
    body = attributes(other)
    result.append("</head>\n<body" + "".join(" " + a for a in body) + ">\n")
    return "\n".join(result), xhtml


def end_html() -> str:
    """``"\\n</body>\\n</html>"``."""
    return "\n</body>\n</html>"


def _tag(name: str, attrs: dict[str, object], content: str) -> str:
    shown = "".join(" " + a for a in attributes(attrs))
    return f"<{name}{shown}>{content}</{name}>"


def _named(
    pairs: dict[str, object], order: tuple[str, ...]
) -> tuple[dict[str, object], dict[str, object]]:
    """A dict of ``-src``, ``-code`` ... as CGI.pm's rearrange reads it: known, other."""
    known: dict[str, object] = {}
    other: dict[str, object] = {}
    for key in sorted(pairs, key=lambda k: (bool(re.search("content", str(k), re.I)), str(k))):
        name = str(key).lstrip("-").lower()
        if name in order:
            known[name] = pairs[key]
        else:
            other[name] = pairs[key]
    return known, other


def _style(style: object, xhtml: bool) -> list[str]:
    """CGI.pm's ``_style``: ``<link rel="stylesheet" ...>`` and ``<style>`` elements."""
    result: list[str] = []
    start = "\n<!--/* <![CDATA[ */" if xhtml else "\n<!-- "
    end = "\n/* ]]> */-->\n" if xhtml else " -->\n"
    other = ""  # (CGI.pm keeps the last style's extra attributes for the ones after it)
    for item in style if isinstance(style, list) else [style]:
        rel, kind = "stylesheet", "text/css"
        if isinstance(item, dict):
            known, extra = _named(item, ("src", "code", "verbatim", "type", "alternate", "foo"))
            kind = str(known["type"]) if known.get("type") is not None else "text/css"
            rel = "alternate stylesheet" if truth(known.get("alternate")) else "stylesheet"
            if extra:
                other = " ".join(attributes(extra))
            src = known.get("src")
            for one in src if isinstance(src, list) else [src]:
                if truth(one):
                    result.append(_link(rel, kind, one, other, xhtml))
            verbatim = known.get("verbatim")
            if truth(verbatim) or isinstance(verbatim, list):
                for text in verbatim if isinstance(verbatim, list) else [verbatim]:
                    result.append(f'<style type="text/css">\n{text}\n</style>')
            code = known.get("code")
            if truth(code) or isinstance(code, list):
                for text in code if isinstance(code, list) else [code]:
                    result.append(_tag("style", {"type": kind}, f"{start}\n{text}\n{end}"))
        else:
            result.append(_link(rel, kind, item, other, xhtml))
    return result


def _link(rel: str, kind: str, src: object, other: str, xhtml: bool) -> str:
    if xhtml:
        return f'<link rel="{rel}" type="{kind}" href="{src}" {other}/>'
    return f'<link rel="{rel}" type="{kind}" href="{src}"{other}>'


def _script(script: object, xhtml: bool) -> list[str]:
    """CGI.pm's ``_script``: a ``<script>`` element for each script (code or ``src``)."""
    result: list[str] = []
    for item in script if isinstance(script, list) else [script]:
        if isinstance(item, dict):
            known, _ = _named(item, ("src", "code", "language", "type", "charset"))
            src, code, charset = known.get("src"), known.get("code"), known.get("charset")
            kind = known.get("type", known.get("language"))
            kind = str(kind) if truth(kind) else "text/javascript"
            if not re.search(r"\w+/\w+", kind):
                kind = "text/" + re.sub(r"[\d.]+" + r"(?=\n?\Z)", "", kind, count=1)
        else:
            src, code, kind, charset = "", item, "text/javascript", ""
        comment = "//"
        if re.search("perl|tcl", kind, re.I):
            comment = "#"
        if re.search("vbscript", kind, re.I):
            comment = "'"
        if xhtml:
            start, end = f"{comment}<![CDATA[\n", f"\n{comment}]]>"
        else:
            start, end = "\n<!-- Hide script\n", f"{comment} End script hiding -->\n"
        attrs: dict[str, object] = {}
        if truth(src):
            attrs["src"] = src
        attrs["type"] = kind
        if truth(src) and truth(charset):
            attrs["charset"] = charset
        text = f"{start}{code}{end}" if code is not None else ""
        result.append(_tag("script", attrs, text if truth(text) else ""))
    return result
