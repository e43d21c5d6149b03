"""Email through Django's email backend (SMTP in production: the EMAIL_* settings).

One message per recipient (`send_many`: a batch over one connection): the subject is the message's title, the body its
text, with a small HTML alternative; both carry the approval's link. A server
that cannot be reached, or answers with an error, is worth retrying; one that
refuses the recipient is final.
"""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from contextlib import suppress

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.utils.html import format_html, format_html_join

from .base import Message, RetryableSendError, SendRefused, Sent


def send(channel, notification, message: Message) -> Sent:
    [answer] = send_many([(channel, notification, message)])
    if isinstance(answer, Exception):
        raise answer
    return answer


def send_many(items) -> Iterator[Sent | Exception]:
    """Each (channel, notification, message) to its address over ONE connection to the
    mail server (opened once, closed at the end): yields each one's `Sent`, or the
    `SendRefused`/`RetryableSendError` it met. After an error the connection is opened
    again; when that fails, the messages left meet the same error."""
    connection = get_connection(fail_silently=False)
    broken: RetryableSendError | None = None
    opened = False
    try:
        for _channel, notification, message in items:
            if not notification.address:
                yield SendRefused("no email address")
                continue
            if not opened:  # opened for the first message that has an address
                broken, opened = _open(connection), True
            if broken is not None:
                yield broken
                continue
            answer = _send(connection, notification.address, message)
            if isinstance(answer, RetryableSendError):
                with suppress(smtplib.SMTPException, OSError):
                    connection.close()
                broken = _open(connection)
            yield answer
    finally:
        with suppress(smtplib.SMTPException, OSError):
            connection.close()


def _open(connection) -> RetryableSendError | None:
    try:
        connection.open()
    except (smtplib.SMTPException, OSError) as exc:
        return _retryable(exc)
    return None


def _retryable(exc: Exception) -> RetryableSendError:
    return RetryableSendError(f"the mail server: {type(exc).__name__}: {exc}")


def _send(connection, address: str, message: Message) -> Sent | Exception:
    email = EmailMultiAlternatives(
        subject=" ".join(message.title.split()),  # one line: no header injection
        body=message.text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[address],
        connection=connection,
    )
    email.attach_alternative(html(message), "text/html")
    try:
        email.send(fail_silently=False)
    except smtplib.SMTPRecipientsRefused:
        return SendRefused(f"the mail server refused {address}")
    except (smtplib.SMTPException, OSError) as exc:
        return _retryable(exc)
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
