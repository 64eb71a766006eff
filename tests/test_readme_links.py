"""Every link in the README stays inside the repository and points at something that exists."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_readme_links_stay_in_the_repository():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", text, re.M)
    }
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links, "the README is expected to link its docs"
    for target in links:
        assert "://" not in target and not target.startswith("mailto:"), f"external link {target}"
        path, _, anchor = target.partition("#")
        if not path:
            assert anchor in anchors, f"no heading for #{anchor}"
            continue
        resolved = (REPO / path).resolve()
        assert REPO in resolved.parents and resolved.exists(), f"{target} leaves the repository or is missing"
