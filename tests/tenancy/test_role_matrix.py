"""The role matrix: one table in code (tenancy_app.permissions), the same table in the README,
and every console view guarded by it."""

from pathlib import Path

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tenancy_app.models import Role
from tenancy_app.permissions import ROLE_MATRIX, Permission, permissions_of, role_has

ROOT = Path(__file__).resolve().parents[2]


def readme_matrix() -> dict[str, dict[str, bool]]:
    """{permission label: {role: allowed}} from the README's "Who may do what" table."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Who may do what", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip().lower() for cell in rows[0].strip("|").split("|")]
    assert header == ["what", "support", "operator", "admin"]
    matrix = {}
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        matrix[cells[0]] = {role: cells[i + 1] == "yes" for i, role in enumerate(header[1:])}
    return matrix


def test_readme_shows_the_matrix_of_the_code():
    expected = {p.label: {role.value: role_has(role, p) for role in Role} for p in Permission}
    assert readme_matrix() == expected


def test_roles_are_ranked_and_the_policy_is_what_people_do():
    assert permissions_of(Role.SUPPORT) == {
        "read": True,
        "export_transcripts": True,
        "decide": False,
        "control_runs": False,
        "settle_effects": False,
        "export_audit": False,
        "close": False,
        "delete": False,
        "erase": False,
        "manage": False,
    }
    assert all(permissions_of(Role.ADMIN).values())
    for permission in Permission:
        ranks = [role_has(role, permission) for role in (Role.SUPPORT, Role.OPERATOR, Role.ADMIN)]
        assert ranks == sorted(ranks), permission  # a higher role never has less
    assert ROLE_MATRIX[Permission.EXPORT_AUDIT] == Role.ADMIN


def _views(patterns, prefix=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _views(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.callback


@pytest.mark.parametrize(
    "path,view",
    [(path, view) for path, view in _views(get_resolver().url_patterns) if path.startswith("t/")],
)
def test_every_tenant_page_names_its_permission(path, view):
    """Each console view under /t/<tenant>/ is guarded by the matrix (the home page is for
    every member, as the middleware already requires)."""
    if path == "t/<slug:tenant_slug>/":
        return
    assert getattr(view, "required_permission", None) in set(Permission), path
