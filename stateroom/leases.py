"""Lease lengths, one name per meaning: a session's lease and a worker's claim on a run.

A session lives for its lease, renewed by every activity (seed 004: a lease,
not forever); the tenant's setting (`Tenant.session_lease_seconds`, set in days
in the console) is the default of new sessions. A run's claim is short and
renewed while its worker lives.
"""

DAY = 86400

DEFAULT_SESSION_LEASE_SECONDS = 30 * DAY
MAX_SESSION_LEASE_SECONDS = 30 * DAY
MAX_SESSION_LEASE_DAYS = MAX_SESSION_LEASE_SECONDS // DAY  # the console's setting, in days

DEFAULT_CLAIM_LEASE_SECONDS = 60
MAX_CLAIM_LEASE_SECONDS = DAY
