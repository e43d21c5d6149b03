"""The console pages that span domains, above the domain apps.

A domain app serves the pages that need only its own store. A page that
shows or acts on several domains (the tenant home, the approval with its
conversation, the run and task inspectors, the session timeline and export,
the retention preview, the inbox badge) lives here, so no domain app imports
another domain's store. `console_app.urls` is the console's URL map: it
mounts each app's own pages and these under the app's URL namespace.
"""
