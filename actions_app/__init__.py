"""Operations that span domain stores, above the domain apps.

A domain store changes only its own state and imports no other domain's
store, except where one domain builds on another (approvals on runs). When
one operation must change two domains at once and the lower one may not know
the upper (a run that ends withdraws its pending approval), it is an action
here: one transaction over both stores, each store auditing its own change.
The API views and jobs that need such an operation live here too.
"""
