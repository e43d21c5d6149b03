"""From the provider's groups claim to a role and member groups (pure functions)."""

from __future__ import annotations

from ..models import ROLE_RANK, Role


def groups_of(claims: dict, claim: str) -> list[str]:
    """The groups in `claims[claim]`: a list, or one string (space or comma separated)."""
    value = claims.get(claim)
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, list):
        return []
    return [str(v) for v in value]


def role_for(groups: list[str], role_map: dict) -> str | None:
    """The highest role a group maps to, or None (no mapped group: no membership)."""
    roles = [Role(role_map[g]) for g in groups if role_map.get(g) in Role.values]
    if not roles:
        return None
    return max(roles, key=lambda r: ROLE_RANK[r]).value


def member_groups_for(groups: list[str], group_map: dict) -> set[str]:
    """The member groups' slugs these groups put the member in."""
    return {group_map[g] for g in groups if g in group_map}


# What `amr` values mean a second factor (RFC 8176): multi-factor, one-time password,
# hardware key, software key.
MFA_AMR = {"mfa", "otp", "hwk", "swk"}


def did_mfa(id_claims: dict, acr_values: list[str]) -> bool:
    amr = id_claims.get("amr")
    if isinstance(amr, list) and MFA_AMR & {str(a) for a in amr}:
        return True
    acr = id_claims.get("acr")
    return bool(acr) and str(acr) in set(acr_values or [])
