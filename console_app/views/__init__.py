"""Console pages that span domains, one module per area (mounted by `console_app.urls`)."""
