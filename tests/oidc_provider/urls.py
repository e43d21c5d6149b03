from django.contrib.auth.views import LoginView
from django.urls import include, path

urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("login/", LoginView.as_view(template_name="op_login.html")),
]
