"""Email through Django's email backend (SMTP in production: the EMAIL_* settings).

One message per recipient: the subject is the message's title, the body its
text, with a small HTML alternative; both carry the approval's link. A server
that cannot be reached, or answers with an error, is worth retrying; one that
refuses the recipient is final.
"""

from __future__ import annotations

import smtplib

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.utils.html import format_html, format_html_join

from .base import Message, RetryableSendError, SendRefused, Sent


def send(channel, notification, message: Message) -> Sent:
    if not notification.address:
        raise SendRefused("no email address")
    email = EmailMultiAlternatives(
        subject=" ".join(message.title.split()),  # one line: no header injection
        body=message.text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[notification.address],
    )
    email.attach_alternative(html(message), "text/html")
    try:
        email.send(fail_silently=False)
    except smtplib.SMTPRecipientsRefused as exc:
        raise SendRefused(f"the mail server refused {notification.address}") from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise RetryableSendError(f"the mail server: {type(exc).__name__}: {exc}") from exc
    return Sent(detail="accepted by the mail server")


def html(message: Message) -> str:
    """The HTML alternative: the same words, escaped, and the link as a link."""
    rows = format_html_join(
        "", '<tr><th align="left">{}</th><td><code>{}</code></td></tr>', message.key_arguments
    )
    summary = message.summary or message.text.splitlines()[0]
    extra = ""
    if message.outcome:
        extra = format_html("<p>Outcome: {}</p>", message.outcome)
    elif message.expires_at is not None:
        extra = format_html("<p>Expires: {}</p>", message.expires_at.isoformat())
    return format_html(
        '<html><body><h1 style="font-size:18px">{}</h1><p>{}</p><table>{}</table>{}'
        '<p><a href="{}">Open it in Stateroom</a></p><p style="color:#666">{}</p></body></html>',
        message.title,
        summary,
        rows,
        extra,
        message.url,
        message.url,
    )
