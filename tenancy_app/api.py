from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.response import Response

from stateroom.api_schema import ERRORS_AUTH


@extend_schema(
    summary="Who am I: the calling token's tenant, name and role",
    responses={
        200: inline_serializer(
            "TokenInfo",
            {
                "tenant": serializers.CharField(),
                "name": serializers.CharField(),
                "role": serializers.CharField(),
            },
        ),
        **ERRORS_AUTH,
    },
)
@api_view(["GET"])
def me(request):
    token = request.auth
    return Response({"tenant": token.tenant.slug, "name": token.name, "role": token.role})
