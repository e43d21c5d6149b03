from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "tenancy_app.auth.BearerTokenAuthentication"
    name = "runtimeToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A runtime token of one tenant (`python manage.py create_token`).",
        }
