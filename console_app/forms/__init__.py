"""Page forms of the console, one module per resource (the views are console_app.views)."""
