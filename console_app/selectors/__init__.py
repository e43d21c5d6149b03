"""Query logic of the console's longer views, one module per resource."""
