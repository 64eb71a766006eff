"""mkdocs hook (``hooks:`` in ``mkdocs.yml``): the negatives' option table, rendered from the registry when the site is built.

A page that holds the marker line gets ``qt_hard.negatives.registry.option_table()`` in its place, so
the table lists every registered part (a newly registered weighting included) without being edited.
"""

MARKER = "<!-- negatives option table -->"


def on_page_markdown(markdown: str, **kwargs) -> str:
    if MARKER not in markdown:
        return markdown
    from qt_hard.negatives.registry import option_table

    return markdown.replace(MARKER, option_table())
