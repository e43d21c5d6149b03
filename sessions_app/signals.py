"""What the session store tells the layers above it, which it does not import.

`session_ended` is sent inside the transaction that ends a session (close,
expire, the lease sweep, a write that found the lease passed), after the row
is saved and audited, with `tenant`, `session`, `actor` (who ended it) and
`clock` (the store's). `lifecycle_app.endings` settles what waits on the
session there, so that no approval reads pending once its session has ended.
"""

from django.dispatch import Signal

session_ended = Signal()
