"""axe-core in the browser tests: fetched from the npm registry at test time, injected into
pages, its serious and critical violations reported.

`npm pack axe-core@<AXE_VERSION>` runs once per checkout into `.stateroom/axe-core/`
(git-ignored) and is reused; node_modules is never made and nothing is committed. Without
npm or the registry a test needing it skips locally and fails in CI (CI=true).
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from functools import cache
from pathlib import Path

from tests.conftest import require_infrastructure

AXE_VERSION = "4.14.1"
ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".stateroom" / "axe-core" / AXE_VERSION
# WCAG 2.1 A and AA, and axe's best practices (as the audit ran them).
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
BLOCKING = ("critical", "serious")


@cache
def _fetch() -> str | None:
    script = CACHE / "axe.min.js"
    if script.exists():
        return script.read_text()
    npm = shutil.which("npm")
    if npm is None:
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "pack", f"axe-core@{AXE_VERSION}", "--pack-destination", str(CACHE), "--silent"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    tarball = CACHE / f"axe-core-{AXE_VERSION}.tgz"
    if done.returncode != 0 or not tarball.exists():
        return None
    with tarfile.open(tarball) as archive:
        member = archive.extractfile("package/axe.min.js")
        assert member is not None
        script.write_bytes(member.read())
    return script.read_text()


def axe_source() -> str:
    source = _fetch()
    require_infrastructure(
        source is not None, f"needs axe-core {AXE_VERSION} from the npm registry"
    )
    return source


def violations(page, *, context: str = "document") -> list[dict]:
    """The serious and critical axe violations of what the page shows now.

    axe is evaluated through the DevTools protocol, which the page's CSP
    (script-src 'self') does not govern, so the console's CSP stays as it is.
    """
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(axe_source())
    result = page.evaluate(
        """async ([context, tags]) => {
            const r = await axe.run(context === "document" ? document : context,
                                    {runOnly: {type: "tag", values: tags}});
            return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.slice(0, 3).map(n => n.target.join(" ") + " :: " + n.failureSummary)}));
        }""",
        [context, TAGS],
    )
    return [v for v in result if v["impact"] in BLOCKING]


def assert_accessible(page, where: str = "") -> None:
    found = violations(page)
    assert not found, f"axe: serious or critical violations on {where or page.url}:\n" + "\n".join(
        f"- {v['impact']} {v['id']}: {v['help']}\n    " + "\n    ".join(v["nodes"]) for v in found
    )
