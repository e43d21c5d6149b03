from django.contrib import admin

from .models import Membership, RuntimeToken, Tenant


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "legal_hold", "created_at"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "tenant", "role"]
    list_filter = ["role", "tenant"]


@admin.register(RuntimeToken)
class RuntimeTokenAdmin(admin.ModelAdmin):
    # Read-only: tokens are created and revoked through the console (audited).
    list_display = ["name", "tenant", "role", "prefix", "last_used_at", "revoked_at"]
    exclude = ["secret_hash", "webhook_secret"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
