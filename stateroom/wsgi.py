import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stateroom.settings")

from stateroom import tracing

tracing.setup()  # before the application loads its middleware; off without an OTLP endpoint
application = get_wsgi_application()

# Behind an undeclared transaction pooler a worker would answer wrong: it does not boot.
from stateroom.postgres.route import verify_at_start  # noqa: E402

verify_at_start()
