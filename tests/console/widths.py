"""The widths the console is checked at: the desktop range an operator uses, and 320 px reflow
(WCAG 1.4.10: a 1280 px screen zoomed to 400 %)."""

WIDTHS = {"1280": (1280, 800), "1920": (1920, 1080), "320": (320, 640)}


def at_width(page, width: str) -> None:
    w, h = WIDTHS[width]
    page.set_viewport_size({"width": w, "height": h})


def text_box(locator) -> dict:
    """The box of the element's own text (not its children's boxes): where the words are."""
    return locator.evaluate(
        """el => {
            const range = document.createRange();
            const text = [...el.childNodes].filter(n => n.nodeType === 3 && n.textContent.trim());
            range.setStartBefore(text[0]);
            range.setEndAfter(text[text.length - 1]);
            const r = range.getBoundingClientRect();
            return {x: r.x, y: r.y, width: r.width, height: r.height};
        }"""
    )
