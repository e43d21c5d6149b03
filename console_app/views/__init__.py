"""Every page of Stateroom, one module per resource (mounted by `console_app.urls`)."""
