"""docs/STATUS.md "## Checked at run time" / "## Not checked at run time": every line names at
least one test, and every test it names exists (the file defines that function)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("## Checked at run time", "## Not checked at run time")


def _section(text: str, title: str) -> list[str]:
    start = text.index(title + "\n")
    rest = text[start + len(title) + 1:]
    end = rest.find("\n## ")
    body = rest if end < 0 else rest[:end]
    return [line for line in body.splitlines() if line.startswith("- ")]


def test_every_status_check_line_names_existing_tests():
    text = (ROOT / "docs" / "STATUS.md").read_text()
    for title in SECTIONS:
        lines = _section(text, title)
        assert lines, f"docs/STATUS.md has no lines under '{title}'"
        for line in lines:
            named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", line)
            assert named, f"{title}: the line names no test: {line}"
            for path, name in named:
                src = (ROOT / path).read_text()
                assert re.search(rf"^def {name}\(", src, re.M), f"{path} has no {name}: {line}"
