"""Channel pages (admins): email, Slack and signed-webhook channels (secrets write-only),
Slack's interaction URL, a test message, and chat users linked to members."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console_app.forms.channels import CHANNEL_KINDS, ChannelForm, LinkForm, TestSendForm
from console_app.selectors.routing import people
from notifications_app.models import ChannelKind
from notifications_app.store import NotificationStore
from notifications_app.testsend import send_test as send_test_message
from stateroom.actor import Actor
from stateroom.errors import NotFound, StateroomError
from stateroom.forms import refused_fields
from stateroom.htmx import redirect_after_post
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission


def _store(request) -> NotificationStore:
    return NotificationStore(request.tenant, Actor.from_request(request))


def _channel(store: NotificationStore, channel_id: str):
    try:
        return store.channel(channel_id)
    except NotFound as exc:
        raise Http404 from exc


def _to_list(request):
    url = reverse("channels:list", kwargs={"tenant_slug": request.tenant.slug})
    return redirect_after_post(request, url)


def interaction_url(request, channel) -> str:
    """Where Slack posts button clicks: paste it into the Slack app's Interactivity."""
    path = f"/hooks/slack/{request.tenant.slug}/{channel.channel_id}/"
    return request.build_absolute_uri(path)


@require_permission(Permission.MANAGE)
@require_GET
def channel_list(request):
    context = {
        "nav": "settings",
        "tab": "channels",
        "channels": list(_store(request).channels()),
        "kinds": [(k.value, k.label) for k in CHANNEL_KINDS],
    }
    return render(request, "console/channels/list.html", context)


def _initial(channel) -> dict:
    if channel is None:
        return {"enabled": True}
    return {
        "name": channel.name,
        "enabled": channel.enabled,
        "channel": channel.config.get("channel", ""),
        "url": channel.config.get("url", ""),
    }


def _edit_page(request, store, kind, channel, form, status=200):
    members, _names = people(request.tenant, Actor.from_request(request))
    chat = channel is not None and kind in (ChannelKind.SLACK, ChannelKind.WEBHOOK)
    context = {
        "nav": "settings",
        "tab": "channels",
        "kind": kind,
        "kind_label": ChannelKind(kind).label,
        "channel": channel,
        "form": form,
        "links": list(store.links(channel)) if chat else [],
        "tests": store.recent_tests(channel) if channel is not None else [],
        "chat": chat,
        "members": members,
        "interaction_url": interaction_url(request, channel)
        if channel is not None and kind == ChannelKind.SLACK
        else "",
    }
    return render(request, "console/channels/edit.html", context, status=status)


@require_permission(Permission.MANAGE)
@require_http_methods(["GET", "POST"])
def channel_edit(request, channel_id: str = "", kind: str = ""):
    """A new channel of `kind`, or channel `channel_id`: its settings, links and a test."""
    store = _store(request)
    channel = _channel(store, channel_id) if channel_id else None
    kind = channel.kind if channel is not None else kind
    if kind not in CHANNEL_KINDS:
        raise Http404
    if request.method == "GET":
        return _edit_page(request, store, kind, channel, ChannelForm(initial=_initial(channel)))
    form = ChannelForm(request.POST)
    if form.is_valid():
        try:
            saved = store.save_channel(
                kind=kind, channel_id=channel_id or None, **form.store_arguments(kind)
            )
        except StateroomError as exc:
            if not refused_fields(form, exc):
                form.add_error(None, _described(exc))
        else:
            messages.success(request, f"Channel {saved.name} saved.")
            url = reverse(
                "channels:edit",
                kwargs={"tenant_slug": request.tenant.slug, "channel_id": saved.channel_id},
            )
            return redirect_after_post(request, url)
    return _edit_page(request, store, kind, channel, form, status=422)


def _described(exc: StateroomError) -> str:
    details = "; ".join(
        f"{name}: {', '.join(errors)}" for name, errors in (exc.details or {}).items()
    )
    return f"{exc.message} {details}".strip()


@require_permission(Permission.MANAGE)
@require_http_methods(["GET", "POST"])
def channel_delete(request, channel_id: str):
    store = _store(request)
    channel = _channel(store, channel_id)
    if request.method == "GET":
        context = {"nav": "settings", "tab": "channels", "channel": channel}
        return render(request, "console/channels/delete.html", context)
    store.delete_channel(channel_id=channel_id)
    messages.success(request, f"Channel {channel.name} deleted.")
    return _to_list(request)


def _to_channel(request, channel_id: str):
    url = reverse(
        "channels:edit", kwargs={"tenant_slug": request.tenant.slug, "channel_id": channel_id}
    )
    return redirect_after_post(request, url)


@require_permission(Permission.MANAGE)
@require_POST
def send_test(request, channel_id: str):
    """Send a test message to one member on this channel; says sent, or why not."""
    store = _store(request)
    channel = _channel(store, channel_id)
    members, _names = people(request.tenant, Actor.from_request(request))
    form = TestSendForm(request.POST, members=members)
    if not form.is_valid():
        messages.error(request, "Choose a member to send the test to.")
        return _to_channel(request, channel_id)
    try:
        send_test_message(
            request.tenant,
            Actor.from_request(request),
            channel.channel_id,
            form.cleaned_data["user_id"],
        )
    except StateroomError as exc:
        messages.error(request, f"Not sent: {_described(exc)}")
    else:
        # Delivered by a worker: the page's "Recent tests" says how it went.
        messages.success(request, f"Test message queued on {channel.name}: see Recent tests.")
    return _to_channel(request, channel_id)


@require_permission(Permission.MANAGE)
@require_POST
def link(request, channel_id: str):
    store = _store(request)
    channel = _channel(store, channel_id)
    members, _names = people(request.tenant, Actor.from_request(request))
    form = LinkForm(request.POST, members=members)
    if not form.is_valid():
        messages.error(request, "Not linked: give the chat user id and choose a member.")
        return _to_channel(request, channel_id)
    try:
        store.link(channel_id=channel.channel_id, **form.cleaned_data)
    except StateroomError as exc:
        messages.error(request, f"Not linked: {_described(exc)}")
    else:
        messages.success(request, f"Linked {form.cleaned_data['external_user_id']}.")
    return _to_channel(request, channel_id)


@require_permission(Permission.MANAGE)
@require_POST
def unlink(request, channel_id: str, user_id: int):
    store = _store(request)
    channel = _channel(store, channel_id)
    try:
        store.unlink(channel_id=channel.channel_id, user_id=user_id)
    except NotFound as exc:
        raise Http404 from exc
    messages.success(request, "Link removed.")
    return _to_channel(request, channel_id)
