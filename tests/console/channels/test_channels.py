"""The channels page (admins): email, Slack and webhook channels with write-only secrets,
Slack's interaction URL, Send test, chat links; roles, isolation, query counts."""

import pytest

from notifications_app.models import Channel, ChatLink
from notifications_app.store import NotificationStore
from stateroom.actor import Actor
from tenancy_app.models import Role
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import layout_queries, message_texts

CHANNELS = "/t/acme/settings/channels/"


def slack(tenant, name="Ops Slack"):
    with in_tenant(tenant):
        return NotificationStore(tenant, Actor.system("t")).save_channel(
            kind="slack",
            name=name,
            config={"channel": "#ops"},
            secret="xoxb-secret-token",
            signing_secret="sign-me",
        )


def saved(tenant, channel_id):
    with in_tenant(tenant):
        return Channel.objects.get(tenant=tenant, channel_id=channel_id)


def test_create_slack_secrets_are_write_only(admin_a, tenant_a):
    client = login(admin_a)
    assert client.get(CHANNELS + "new/slack").status_code == 200
    response = client.post(
        CHANNELS + "new/slack",
        {
            "name": "Ops",
            "secret": "xoxb-1",
            "signing_secret": "s3",
            "channel": "#ops",
            "enabled": "on",
        },
    )
    assert response.status_code == 302
    channel_id = response["Location"].rstrip("/").rsplit("/", 1)[-1]
    page = client.get(response["Location"]).content.decode()
    assert "xoxb-1" not in page and 's3"' not in page
    assert 'data-testid="secret-set"' in page and 'data-testid="signing-secret-set"' in page
    assert f"http://testserver/hooks/slack/acme/{channel_id}/" in page
    # An empty secret keeps the saved one.
    client.post(response["Location"], {"name": "Ops 2", "channel": "#ops", "enabled": "on"})
    channel = saved(tenant_a, channel_id)
    assert (channel.name, channel.secret, channel.signing_secret) == ("Ops 2", "xoxb-1", "s3")


def test_webhook_and_validation_errors(admin_a, tenant_a):
    client = login(admin_a)
    response = client.post(
        CHANNELS + "new/webhook", {"name": "Hook", "url": "https://example.com/x"}
    )
    assert response.status_code == 422
    assert "the signing secret" in response.content.decode()
    response = client.post(CHANNELS + "new/slack", {"name": "S"})
    assert response.status_code == 422
    assert "bot token" in response.content.decode()
    response = client.post(
        CHANNELS + "new/webhook", {"name": "Hook", "url": "https://example.com/x", "secret": "k"}
    )
    assert response.status_code == 302
    assert client.get(CHANNELS + "new/sms").status_code == 404


def test_send_test_queues_a_message_and_the_page_shows_how_it_went(
    admin_a, tenant_a, operator_a, django_capture_on_commit_callbacks
):
    from django.core import mail

    admin_a.email = "admin@acme.example"
    admin_a.save()
    with in_tenant(tenant_a):
        channel = NotificationStore(tenant_a, Actor.system("t")).save_channel(
            kind="email", name="Team email"
        )
    client = login(admin_a)
    url = f"{CHANNELS}{channel.channel_id}/test"
    with django_capture_on_commit_callbacks(execute=True):  # the worker delivers it
        response = client.post(url, {"user_id": admin_a.pk}, follow=True)
    assert "Test message queued on Team email: see Recent tests." in message_texts(response)
    assert [m.to for m in mail.outbox] == [["admin@acme.example"]]
    page = client.get(f"{CHANNELS}{channel.channel_id}/").content.decode()
    assert page.count('data-testid="test-row"') == 1
    assert ">sent</span>" in page

    # A test goes to an admin only: refused, nothing queued.
    response = client.post(url, {"user_id": operator_a.pk}, follow=True)
    assert "Not sent: A test goes to an admin of this tenant." in " ".join(message_texts(response))
    assert len(mail.outbox) == 1


def test_link_and_unlink_a_chat_user(admin_a, tenant_a, make_user):
    bob = make_user("bob", tenant_a, Role.OPERATOR)
    channel = slack(tenant_a)
    client = login(admin_a)
    base = f"{CHANNELS}{channel.channel_id}/"
    client.post(base + "links", {"external_user_id": "U024BE7LH", "user_id": bob.pk})
    page = client.get(base).content.decode()
    assert "U024BE7LH" in page and 'data-testid="link-row"' in page
    response = client.post(base + "links", {"external_user_id": "", "user_id": bob.pk}, follow=True)
    assert any(m.startswith("Not linked") for m in message_texts(response))
    client.post(f"{base}links/{bob.pk}/unlink")
    with in_tenant(tenant_a):
        assert not ChatLink.objects.filter(tenant=tenant_a).exists()
    assert client.post(f"{base}links/{bob.pk}/unlink").status_code == 404


def test_delete_asks_first(admin_a, tenant_a):
    channel = slack(tenant_a)
    client = login(admin_a)
    url = f"{CHANNELS}{channel.channel_id}/delete"
    assert "Delete the channel Ops Slack?" in client.get(url).content.decode()
    assert "Channel Ops Slack deleted." in message_texts(client.post(url, follow=True))
    with in_tenant(tenant_a):
        assert not Channel.objects.filter(tenant=tenant_a).exists()


@pytest.mark.parametrize("fixture", ["operator_a", "support_a"])
def test_below_admin_is_refused(request, fixture, tenant_a):
    channel = slack(tenant_a)
    client = login(request.getfixturevalue(fixture))
    assert client.get(CHANNELS).status_code == 403
    assert client.get(f"{CHANNELS}{channel.channel_id}/").status_code == 403
    assert client.post(f"{CHANNELS}{channel.channel_id}/test", {"user_id": 1}).status_code == 403


def test_another_tenants_channel_is_404(admin_a, tenant_b, make_user):
    theirs = slack(tenant_b, "Theirs")
    client = login(admin_a)
    base = f"{CHANNELS}{theirs.channel_id}/"
    assert client.get(base).status_code == 404
    assert client.get(base + "delete").status_code == 404
    for url in ("", "delete", "test", "links"):
        assert client.post(base + url, {"name": "x", "user_id": 1}).status_code == 404
    assert saved(tenant_b, theirs.channel_id).name == "Theirs"


@pytest.mark.parametrize("count", [1, 4])
def test_query_counts(admin_a, tenant_a, count, django_assert_num_queries):
    for n in range(count):
        channel = slack(tenant_a, f"Slack {n}")
    client = login(admin_a)
    layout = layout_queries(client, tenant_a)
    with django_assert_num_queries(layout + 1):
        body = client.get(CHANNELS).content.decode()
    assert body.count('data-testid="channel-row"') == count
    # The channel, the members, its links with their users, its recent tests.
    with django_assert_num_queries(layout + 4):
        client.get(f"{CHANNELS}{channel.channel_id}/")
