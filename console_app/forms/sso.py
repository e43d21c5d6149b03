"""The single sign-on settings form: mappings written one `group = value` per line."""

from django import forms

from tenancy_app.models import SsoConfig


def parse_lines(text: str) -> dict[str, str]:
    """`group = value` lines (blank lines skipped) to a dict; ValidationError on others."""
    found = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        group, sep, value = line.partition("=")
        if not sep or not group.strip() or not value.strip():
            raise forms.ValidationError(f"Line {number}: write group = value.")
        found[group.strip()] = value.strip()
    return found


def as_lines(mapping: dict) -> str:
    return "\n".join(f"{group} = {value}" for group, value in mapping.items())


class SsoForm(forms.Form):
    enabled = forms.BooleanField(required=False)
    display_name = forms.CharField(max_length=100)
    issuer = forms.URLField(max_length=500, assume_scheme="https")
    client_id = forms.CharField(max_length=255)
    client_secret = forms.CharField(required=False, widget=forms.PasswordInput)
    scopes = forms.CharField(max_length=200)
    groups_claim = forms.CharField(max_length=100)
    role_map = forms.CharField(required=False, widget=forms.Textarea)
    group_map = forms.CharField(required=False, widget=forms.Textarea)
    mfa_acr_values = forms.CharField(required=False, max_length=500)
    require_sso = forms.BooleanField(required=False)

    def clean_role_map(self):
        return parse_lines(self.cleaned_data["role_map"])

    def clean_group_map(self):
        return parse_lines(self.cleaned_data["group_map"])

    def clean_mfa_acr_values(self):
        return self.cleaned_data["mfa_acr_values"].split()

    @staticmethod
    def initial_from(config: SsoConfig | None, require_sso: bool) -> dict:
        if config is None:
            return {
                "enabled": True,
                "display_name": "Company sign-in",
                "groups_claim": "groups",
                "scopes": "openid email profile",
                "require_sso": require_sso,
            }
        return {
            "enabled": config.enabled,
            "display_name": config.display_name,
            "issuer": config.issuer,
            "client_id": config.client_id,
            "scopes": config.scopes,
            "groups_claim": config.groups_claim,
            "role_map": as_lines(config.role_map),
            "group_map": as_lines(config.group_map),
            "mfa_acr_values": " ".join(config.mfa_acr_values),
            "require_sso": require_sso,
        }
