from django.urls import path

from . import views

urlpatterns = [
    path("", views.sso_entry, name="sso-entry"),
    path("callback/", views.SsoCallback.as_view(), name="sso-callback"),
    path("<slug:slug>/", views.sso_page, name="sso-page"),
    path("<slug:slug>/start/", views.SsoStart.as_view(), name="sso-start"),
]
