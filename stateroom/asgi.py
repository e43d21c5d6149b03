import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stateroom.settings")

from stateroom import tracing

tracing.setup()  # before the application loads its middleware; off without an OTLP endpoint
application = get_asgi_application()
